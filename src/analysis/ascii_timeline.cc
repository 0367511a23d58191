#include "tracesmith/analysis/ascii_timeline.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::analysis {

namespace {

// Where each of `buckets` buckets over [from, to) starts, and `to` after the last: computed once
// per window (Spread runs per row: with 1M kernels spanning the window, the bounds' long double
// arithmetic per bucket took a 100-column timeline 20 s).
const std::vector<uint64_t>& BucketStarts(uint64_t from, uint64_t to, size_t buckets) {
  thread_local uint64_t cached_from = 1, cached_to = 0;
  thread_local std::vector<uint64_t> starts;
  if (cached_from != from || cached_to != to || starts.size() != buckets + 1) {
    const long double span = static_cast<long double>(to - from);
    starts.resize(buckets + 1);
    for (size_t b = 0; b < buckets; ++b)
      starts[b] = from + static_cast<uint64_t>(span * b / buckets);
    starts[buckets] = to;
    cached_from = from;
    cached_to = to;
  }
  return starts;
}

// Adds the part of [s, e) inside each bucket to acc[bucket].
void Spread(uint64_t s, uint64_t e, uint64_t from, uint64_t to, size_t buckets,
            std::vector<uint64_t>* acc) {
  s = std::max(s, from);
  e = std::min(e, to);
  if (e <= s) return;
  const long double span = static_cast<long double>(to - from);
  const size_t first = std::min(static_cast<size_t>((s - from) * buckets / span), buckets - 1);
  const std::vector<uint64_t>& starts = BucketStarts(from, to, buckets);
  for (size_t b = first; b < buckets; ++b) {
    uint64_t bs = std::max(s, starts[b]);
    uint64_t be = std::min(e, starts[b + 1]);
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

namespace {

// One row of the timeline: a GPU stream (a: kernel time, b: memcpy/memset
// time per bucket) or a host thread (a: API time).
struct Row {
  std::string name;
  bool host = false;
  uint32_t lane = 0;  // the caller's lane number
  std::vector<uint64_t> a, b;
};

// Label width and bucket count for these row names.
struct Layout {
  size_t label = 8, buckets = 10;
};
Layout LayoutFor(const std::vector<Row>& rows, int width) {
  Layout l;
  for (const Row& r : rows) l.label = std::max(l.label, r.name.size());
  const size_t w = static_cast<size_t>(std::max(width, 20));
  l.buckets = w > l.label + 3 ? w - l.label - 3 : 10;
  return l;
}

// The text, once each row's busy time per bucket of [from, to] is summed.
std::string Format(const std::vector<Row>& rows, const Layout& l, uint64_t from, uint64_t to,
                   uint64_t trace_begin) {
  const size_t label = l.label, buckets = l.buckets;
  if (to <= from || rows.empty()) return "(no events in the window)\n";
  std::string out;
  const uint64_t span = to - from;
  const uint64_t bucket_ns = std::max<uint64_t>(1, span / buckets);
  // Axis: start, middle and end offsets from the trace start.
  std::string axis(buckets, ' ');
  auto put = [&](size_t pos, const std::string& s) {
    pos = std::min(pos, buckets > s.size() ? buckets - s.size() : 0);
    for (size_t i = 0; i < s.size() && pos + i < buckets; ++i) axis[pos + i] = s[i];
  };
  put(0, "+" + HumanDuration(from - trace_begin));
  std::string mid = "+" + HumanDuration(from + span / 2 - trace_begin);
  put(buckets / 2 - std::min(buckets / 2, mid.size() / 2), mid);
  put(buckets, "+" + HumanDuration(to - trace_begin));
  out += std::string(label, ' ') + "  " + axis + "\n";
  for (const Row& r : rows) {
    std::string bar(buckets, '.');
    for (size_t k = 0; k < buckets; ++k)
      bar[k] = r.host ? Glyph(r.a[k], 0, bucket_ns, 'A', 'A')
                      : Glyph(r.a[k], r.b[k], bucket_ns, 'K', 'M');
    out += r.name + std::string(label - r.name.size(), ' ') + " |" + bar + "\n";
  }
  out += StrFormat(
      "%s  1 char = %s; K/k kernel, M/m memcpy/memset, A/a host API, . idle "
      "(upper case: busy >= half the bucket)\n",
      std::string(label, ' ').c_str(), HumanDuration(bucket_ns).c_str());
  return out;
}

std::string GpuRowName(const Lane& l) { return StrFormat("GPU %u stream %u", l.device, l.stream); }
std::string HostRowName(const Lane& l) { return StrFormat("thread %u", l.tid); }

}  // namespace

std::string RenderAsciiTimeline(const CompactTrace& t, const AsciiTimelineOptions& o) {
  uint64_t from = o.from, to = o.to;
  if (to <= from) from = t.window_begin(), to = t.window_end();
  std::vector<Row> rows;
  for (uint32_t l : t.gpu_lanes()) rows.push_back({GpuRowName(t.lanes()[l]), false, l, {}, {}});
  if (o.host_rows)
    for (uint32_t l = 0; l < t.lanes().size(); ++l)
      if (t.lanes()[l].host && t.lane_range(l).end > t.lane_range(l).begin)
        rows.push_back({HostRowName(t.lanes()[l]), true, l, {}, {}});
  const Layout layout = LayoutFor(rows, o.width);
  if (to <= from || rows.empty()) return Format(rows, layout, from, to, t.trace_begin());
  for (Row& row : rows) {
    row.a.assign(layout.buckets, 0);
    row.b.assign(layout.buckets, 0);
    LaneRange r = t.lane_range(row.lane);
    if (row.host) {
      for (uint32_t i = r.begin; i < r.end; ++i)
        Spread(t.calls()[i].start_ns, t.calls()[i].end_ns, from, to, layout.buckets, &row.a);
    } else {
      const auto ops = t.ops();
      // Ops are sorted by start: skip to the first that can overlap `from`.
      for (uint32_t i = r.begin; i < r.end && ops[i].start_ns < to; ++i) {
        if (ops[i].end_ns <= from) continue;
        Spread(ops[i].start_ns, ops[i].end_ns, from, to, layout.buckets,
               ops[i].kind() == OpKind::kKernel ? &row.a : &row.b);
      }
    }
  }
  return Format(rows, layout, from, to, t.trace_begin());
}

// ---- straight from the file ------------------------------------------------

namespace {

// What the passes over the file learn about the processes, lanes and times.
class TimelineScan {
 public:
  // Pass 1: lanes, processes and the raw time extent of each process.
  void Extent(const model::Trace& batch, model::TableKind kind) {
    using namespace model;
    auto fn = [&](uint32_t pid, uint64_t s, uint64_t e, const Lane*, bool) {
      if (pid != last_pid_ || !last_extent_) last_pid_ = pid, last_extent_ = &extents_[pid];
      Note(s, &last_extent_->start);
      Note(e, &last_extent_->end);
    };
    ForEachEvent(batch, kind, /*note_lanes=*/true, fn);
  }
  // After pass 1 (`anchors`: every ClockAnchor row of the file): the trace's
  // first and last time on the common clock, as CompactTrace::Finalize finds
  // them. A ClockMap is monotonic, so the extremes of a process's converted
  // times are the converted extremes of its recorded ones.
  void Align(const std::vector<model::ClockAnchor>& anchors) {
    std::set<uint32_t> pids;
    for (const auto& [pid, x] : extents_) pids.insert(pid);
    align_ = ClockAlignment::Build(pids, anchors);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& [pid, x] : extents_) {
      const ClockMap* m = align_.MapOf(pid);
      auto f = [&](uint64_t t) { return m ? (*m)(t) : t; };
      // Starts: their minimum and maximum; ends: max(start, f(end)).
      for (uint64_t t : x.start.Values()) lo = std::min(lo, f(t)), hi = std::max(hi, f(t));
      for (uint64_t t : x.end.Values()) hi = std::max(hi, f(t));
    }
    if (lo > hi) lo = hi = 0;
    begin_ = lo;
    end_ = hi;
  }
  uint64_t begin() const { return begin_; }
  uint64_t end() const { return end_; }

  // Pass 2 (only with a window): which lanes keep an op or call in it.
  void Keep(const model::Trace& batch, model::TableKind kind, uint64_t from, uint64_t to) {
    ForEachShown(batch, kind, from, to, [&](const LaneKey& key, uint64_t, uint64_t, bool) {
      if (kept_.empty() || key != last_kept_) kept_.insert(key), last_kept_ = key;
    });
  }

  // The rows, in CompactTrace's lane order: GPU streams by (pid, device,
  // stream), then host threads by (pid, tid); `all`: every lane with an op
  // or call (no window), else those Keep() saw.
  std::vector<Row> Rows(bool host_rows, bool all) {
    std::vector<std::pair<LaneKey, Lane>> shown;
    for (const auto& [key, lane] : lanes_) {
      if (!lane.second) continue;  // a host thread with NVTX ranges only
      if (lane.first.host && !host_rows) continue;
      if (!all && !kept_.contains(key)) continue;
      shown.push_back({key, lane.first});
    }
    std::sort(shown.begin(), shown.end(), [](const auto& a, const auto& b) {
      const Lane &x = a.second, &y = b.second;
      return std::tie(x.host, x.pid, x.device, x.stream, x.tid) <
             std::tie(y.host, y.pid, y.device, y.stream, y.tid);
    });
    std::vector<Row> rows;
    row_of_.clear();
    last_key_.reset();
    last_row_ = kNone;
    for (const auto& [key, lane] : shown) {
      row_of_[key] = uint32_t(rows.size());
      rows.push_back({lane.host ? HostRowName(lane) : GpuRowName(lane), lane.host, 0, {}, {}});
    }
    return rows;
  }

  // Last pass: each op's and call's time in the buckets of its row.
  // (Without a window, [filter_from, filter_to] is [0, UINT64_MAX]: keeps all.)
  void Spread(const model::Trace& batch, model::TableKind kind, uint64_t filter_from,
              uint64_t filter_to, uint64_t from, uint64_t to, size_t buckets,
              std::vector<Row>* rows) {
    ForEachShown(batch, kind, filter_from, filter_to,
                 [&](const LaneKey& key, uint64_t s, uint64_t e, bool kernel) {
                   if (last_key_ != key) {
                     auto it = row_of_.find(key);
                     last_key_ = key;
                     last_row_ = it == row_of_.end() ? kNone : it->second;
                   }
                   if (last_row_ == kNone) return;
                   Row& r = (*rows)[last_row_];
                   analysis::Spread(s, e, from, to, buckets, r.host || kernel ? &r.a : &r.b);
                 });
  }

 private:
  struct MinMax {
    uint64_t lo = UINT64_MAX, hi = 0;
    bool zero = false;  // 0 ("unknown") is never converted
    std::vector<uint64_t> Values() const {
      std::vector<uint64_t> v;
      if (zero) v.push_back(0);
      if (lo <= hi) v.push_back(lo), v.push_back(hi);
      return v;
    }
  };
  struct ProcessExtent {
    MinMax start, end;
  };
  static void Note(uint64_t t, MinMax* m) {
    if (t == 0) {
      m->zero = true;
    } else {
      m->lo = std::min(m->lo, t);
      m->hi = std::max(m->hi, t);
    }
  }
  // GPU and host lanes are keyed apart, as in CompactTrace.
  using LaneKey = std::pair<bool, uint64_t>;
  static LaneKey Key(const Lane& l) {
    return {l.host, l.host ? HostLaneKey(l.pid, l.tid) : GpuLaneKey(l.pid, l.device, l.stream)};
  }

  // Calls fn(pid, start, end, lane or null, kernel) for each event row of
  // `kind` that CompactTrace keeps, its end fixed as CompactTrace does (an
  // inverted interval has zero length); `lane` for ops, calls and NVTX ranges.
  template <typename Fn>
  void ForEachEvent(const model::Trace& batch, model::TableKind kind, bool note_lanes, Fn fn) {
    using namespace model;
    auto end = [](uint64_t s, uint64_t e) { return e >= s ? e : s; };
    auto gpu = [&](const auto& rows, bool kernel) {
      for (const auto& r : rows) {
        Lane l{.host = false, .pid = r.pid, .device = r.device_id, .stream = r.stream_id};
        if (note_lanes) NoteLane(l, true);
        fn(r.pid, r.start_ns, end(r.start_ns, r.end_ns), &l, kernel);
      }
    };
    switch (kind) {
      case TableKind::kKernel:
        return gpu(batch.Rows<KernelEvent>(), true);
      case TableKind::kMemcpy:
        return gpu(batch.Rows<MemcpyEvent>(), false);
      case TableKind::kMemset:
        return gpu(batch.Rows<MemsetEvent>(), false);
      case TableKind::kApi:
        for (const ApiEvent& r : batch.Rows<ApiEvent>()) {
          Lane l{.host = true, .pid = r.pid, .tid = r.tid};
          if (note_lanes) NoteLane(l, true);
          fn(r.pid, r.start_ns, end(r.start_ns, r.end_ns), &l, false);
        }
        return;
      case TableKind::kNvtxRange:
        for (const NvtxRangeEvent& r : batch.Rows<NvtxRangeEvent>()) {
          Lane l{.host = true, .pid = r.pid, .tid = r.tid};
          if (note_lanes) NoteLane(l, false);
          fn(r.pid, r.start_ns, end(r.start_ns, r.end_ns), &l, false);
        }
        return;
      case TableKind::kSync:
        for (const SyncEvent& r : batch.Rows<SyncEvent>())
          fn(r.pid, r.start_ns, end(r.start_ns, r.end_ns), nullptr, false);
        return;
      case TableKind::kGraphLaunch:
        for (const GraphLaunchEvent& r : batch.Rows<GraphLaunchEvent>())
          fn(r.pid, r.start_ns, end(r.start_ns, r.end_ns), nullptr, false);
        return;
      default:
        return;
    }
  }
  // Marks a lane seen (`busy`: it has an op or call, not only NVTX ranges).
  void NoteLane(const Lane& l, bool busy) {
    const LaneKey key = Key(l);
    if (noted_key_ == key && busy == noted_busy_) return;  // rows come in runs of one lane
    auto [it, fresh] = lanes_.try_emplace(key, l, busy);
    it->second.second |= busy;
    noted_key_ = key;
    noted_busy_ = busy;
  }

  // Ops and calls on the common clock that are not outside [from, to]
  // (CompactTrace::RestrictWindow's rule): fn(lane key, start, end, kernel).
  // Host rows are API calls only: a thread's NVTX ranges are not drawn.
  template <typename Fn>
  void ForEachShown(const model::Trace& batch, model::TableKind kind, uint64_t from, uint64_t to,
                    Fn fn) {
    ForEachEvent(batch, kind, false,
                 [&](uint32_t pid, uint64_t s, uint64_t e, const Lane* lane, bool kernel) {
                   if (!lane || (lane->host && kind != model::TableKind::kApi)) return;
                   ConvertInterval(align_.MapOf(pid), &s, &e);
                   if (s == e ? (s < from || s > to) : (e <= from || s >= to)) return;
                   fn(Key(*lane), s, e, kernel);
                 });
  }

  std::map<uint32_t, ProcessExtent> extents_;  // std::map: stable addresses
  uint32_t last_pid_ = 0;
  ProcessExtent* last_extent_ = nullptr;
  // Lanes by key: the first (pid, device, stream) or (pid, tid) seen under
  // that key, and whether it has ops or calls.
  std::map<LaneKey, std::pair<Lane, bool>> lanes_;
  std::set<LaneKey> kept_;
  std::map<LaneKey, uint32_t> row_of_;
  // Caches of the last lane (rows come in runs of one lane); empty before
  // the first, so that no lane's key (pid 0 device 0 stream 0 included)
  // matches them by accident.
  std::optional<LaneKey> noted_key_;
  LaneKey last_kept_{};
  bool noted_busy_ = false;
  std::optional<LaneKey> last_key_;  // Spread's cache
  uint32_t last_row_ = kNone;
  ClockAlignment align_;
  uint64_t begin_ = 0, end_ = 0;
};

}  // namespace

Status RenderAsciiTimelineFile(const std::string& path, const AsciiTimelineFileOptions& o,
                               std::string* text, format::ReadReport* report) {
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> source, format::OpenFileSource(path));
  return RenderAsciiTimelineFile(*source, o, text, report);
}

Status RenderAsciiTimelineFile(format::TraceSource& source, const AsciiTimelineFileOptions& o,
                               std::string* text, format::ReadReport* report) {
  TimelineScan scan;
  std::vector<model::ClockAnchor> anchors;
  auto pass = [&](const format::SbtReader::EventChunkCallback& fn) -> Status {
    Status st = source.Stream(fn, [&](const model::Trace& batch) {
      anchors = batch.Rows<model::ClockAnchor>();
      return OkStatus();
    });
    return st.ok() || source.name().empty()
               ? st
               : Status(st.code(), source.name() + ": " + st.message());
  };
  RETURN_IF_ERROR(pass([&](const model::Trace& batch, model::TableKind kind) {
    scan.Extent(batch, kind);
    return OkStatus();
  }));
  scan.Align(anchors);
  // The window, as analysis::ApplyRestrictions and CompactTrace::RestrictWindow set it.
  const bool window = !o.from.empty() || !o.to.empty();
  uint64_t from = scan.begin(), to = scan.end();
  uint64_t filter_from = 0, filter_to = UINT64_MAX;  // CompactTrace::RestrictWindow's bounds
  if (window) {
    ASSIGN_OR_RETURN(TimeWindowNs w, ParseTimeWindow(o.from, o.to, scan.begin()));
    const uint64_t f = w.from, t = w.to;
    RETURN_IF_ERROR(pass([&](const model::Trace& batch, model::TableKind kind) {
      scan.Keep(batch, kind, f, t);
      return OkStatus();
    }));
    from = std::max(scan.begin(), f);
    to = std::max(from, std::min(scan.end(), t));
    filter_from = f;
    filter_to = t;
  }
  std::vector<Row> rows = scan.Rows(o.timeline.host_rows, !window);
  const Layout layout = LayoutFor(rows, o.timeline.width);
  if (to > from && !rows.empty()) {
    for (Row& r : rows) r.a.assign(layout.buckets, 0), r.b.assign(layout.buckets, 0);
    RETURN_IF_ERROR(pass([&](const model::Trace& batch, model::TableKind kind) {
      scan.Spread(batch, kind, filter_from, filter_to, from, to, layout.buckets, &rows);
      return OkStatus();
    }));
  }
  if (report) *report = source.report();
  *text = Format(rows, layout, from, to, scan.begin());
  return OkStatus();
}

}  // namespace tracesmith::analysis
