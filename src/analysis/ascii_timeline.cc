#include "tracesmith/analysis/ascii_timeline.h"

#include <algorithm>

#include "tracesmith/base/file_util.h"

namespace tracesmith::analysis {

namespace {

// Adds the part of [s, e) inside each bucket to acc[bucket].
void Spread(uint64_t s, uint64_t e, uint64_t from, uint64_t to, size_t buckets,
            std::vector<uint64_t>* acc) {
  s = std::max(s, from);
  e = std::min(e, to);
  if (e <= s) return;
  const long double span = static_cast<long double>(to - from);
  auto bucket_of = [&](uint64_t t) {
    size_t b = static_cast<size_t>((t - from) * buckets / span);
    return std::min(b, buckets - 1);
  };
  auto bucket_start = [&](size_t b) { return from + static_cast<uint64_t>(span * b / buckets); };
  for (size_t b = bucket_of(s); b < buckets; ++b) {
    uint64_t bs = std::max(s, bucket_start(b));
    uint64_t be = std::min(e, b + 1 == buckets ? to : bucket_start(b + 1));
    if (be > bs) (*acc)[b] += be - bs;
    if (be >= e) break;
  }
}

char Glyph(uint64_t primary, uint64_t secondary, uint64_t bucket_ns, char upper, char other) {
  const uint64_t busy = primary + secondary;
  if (busy == 0) return '.';
  char c = primary >= secondary ? upper : other;
  bool full = 2 * std::min(busy, bucket_ns) >= bucket_ns;
  return full ? c : static_cast<char>(c - 'A' + 'a');
}

}  // namespace

std::string RenderAsciiTimeline(const CompactTrace& t, const AsciiTimelineOptions& o) {
  uint64_t from = o.from, to = o.to;
  if (to <= from) from = t.window_begin(), to = t.window_end();
  std::vector<std::pair<std::string, uint32_t>> rows;
  for (uint32_t l : t.gpu_lanes()) {
    const Lane& lane = t.lanes()[l];
    rows.push_back({StrFormat("GPU %u stream %u", lane.device, lane.stream), l});
  }
  if (o.host_rows)
    for (uint32_t l = 0; l < t.lanes().size(); ++l)
      if (t.lanes()[l].host && t.lane_range(l).end > t.lane_range(l).begin)
        rows.push_back({StrFormat("thread %u", t.lanes()[l].tid), l});
  size_t label = 8;
  for (auto& r : rows) label = std::max(label, r.first.size());
  const size_t width = static_cast<size_t>(std::max(o.width, 20));
  const size_t buckets = width > label + 3 ? width - label - 3 : 10;
  std::string out;
  if (to <= from || rows.empty()) return "(no events in the window)\n";
  const uint64_t span = to - from;
  const uint64_t bucket_ns = std::max<uint64_t>(1, span / buckets);
  // Axis: start, middle and end offsets from the trace start.
  std::string axis(buckets, ' ');
  auto put = [&](size_t pos, const std::string& s) {
    pos = std::min(pos, buckets > s.size() ? buckets - s.size() : 0);
    for (size_t i = 0; i < s.size() && pos + i < buckets; ++i) axis[pos + i] = s[i];
  };
  put(0, "+" + HumanDuration(from - t.trace_begin()));
  std::string mid = "+" + HumanDuration(from + span / 2 - t.trace_begin());
  put(buckets / 2 - std::min(buckets / 2, mid.size() / 2), mid);
  put(buckets, "+" + HumanDuration(to - t.trace_begin()));
  out += std::string(label, ' ') + "  " + axis + "\n";
  std::vector<uint64_t> a(buckets), b(buckets);
  for (auto& [name, lane] : rows) {
    std::fill(a.begin(), a.end(), 0);
    std::fill(b.begin(), b.end(), 0);
    LaneRange r = t.lane_range(lane);
    std::string bar(buckets, '.');
    if (t.lanes()[lane].host) {
      for (uint32_t i = r.begin; i < r.end; ++i)
        Spread(t.calls()[i].start_ns, t.calls()[i].end_ns, from, to, buckets, &a);
      for (size_t k = 0; k < buckets; ++k) bar[k] = Glyph(a[k], 0, bucket_ns, 'A', 'A');
    } else {
      const auto& ops = t.ops();
      // Ops are sorted by start: skip to the first that can overlap `from`.
      for (uint32_t i = r.begin; i < r.end && ops[i].start_ns < to; ++i) {
        if (ops[i].end_ns <= from) continue;
        Spread(ops[i].start_ns, ops[i].end_ns, from, to, buckets,
               ops[i].kind() == OpKind::kKernel ? &a : &b);
      }
      for (size_t k = 0; k < buckets; ++k) bar[k] = Glyph(a[k], b[k], bucket_ns, 'K', 'M');
    }
    out += name + std::string(label - name.size(), ' ') + " |" + bar + "\n";
  }
  out += StrFormat(
      "%s  1 char = %s; K/k kernel, M/m memcpy/memset, A/a host API, . idle "
      "(upper case: busy >= half the bucket)\n",
      std::string(label, ' ').c_str(), HumanDuration(bucket_ns).c_str());
  return out;
}

}  // namespace tracesmith::analysis
