// What `analyze` says of the GPU metric samples (analysis/gpu_metrics.h).
//
// Per device, the kernels' GPU time is cut into segments between their
// starts and ends: a segment where one kernel runs belongs to it alone, one
// where several run is shared by them. Each sample then adds its value,
// weighted by its overlap with a segment, to the segment's kernels (alone or
// shared). Samples and segments are both in time order: one walk each.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "tracesmith/analysis/gpu_metrics.h"
#include "tracesmith/analysis/steps.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

constexpr size_t kMaxNamesPerSegment = 16;  // kernels credited with a shared segment at most

struct Segment {
  uint64_t begin = 0, end = 0;
  uint32_t first = 0, count = 0;  // names_[first, first + count): one = alone
};

struct DeviceSegments {
  std::vector<Segment> segments;
  std::vector<uint32_t> names;  // kernel name ids
};

// The kernel segments of every (pid, device) inside [from, to).
std::map<std::pair<uint32_t, uint32_t>, DeviceSegments> KernelSegments(const CompactTrace& t,
                                                                       uint64_t from, uint64_t to) {
  struct Edge {
    uint64_t t;
    int delta;
    uint32_t name;
  };
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Edge>> edges;
  for (const GpuOp& op : t.ops()) {
    if (op.kind() != OpKind::kKernel) continue;
    const uint64_t b = std::max(op.start_ns, from), e = std::min(op.end_ns, to);
    if (e <= b) continue;
    const Lane& lane = t.lanes()[op.lane()];
    auto& v = edges[{lane.pid, lane.device}];
    v.push_back({b, +1, op.name_id});
    v.push_back({e, -1, op.name_id});
  }
  std::map<std::pair<uint32_t, uint32_t>, DeviceSegments> out;
  for (auto& [key, v] : edges) {
    std::sort(v.begin(), v.end(), [](const Edge& a, const Edge& b) {
      return a.t != b.t ? a.t < b.t : a.delta < b.delta;  // ends first
    });
    DeviceSegments& d = out[key];
    std::map<uint32_t, uint32_t> running;  // name -> kernels of it running
    uint64_t at = 0;
    for (const Edge& e : v) {
      if (!running.empty() && e.t > at) {
        Segment s{at, e.t, uint32_t(d.names.size()), 0};
        for (const auto& [name, n] : running) {
          if (s.count == kMaxNamesPerSegment) break;
          d.names.push_back(name);
          ++s.count;
        }
        // Two launches of one kernel at once run beside each other: shared.
        if (running.size() == 1 && running.begin()->second > 1) d.names.push_back(kNone), ++s.count;
        d.segments.push_back(s);
      }
      at = e.t;
      if (e.delta > 0) {
        ++running[e.name];
      } else if (auto it = running.find(e.name); it != running.end() && --it->second == 0) {
        running.erase(it);
      }
    }
  }
  return out;
}

struct Sums {
  double alone = 0, alone_w = 0, shared = 0, shared_w = 0;
};

double Mean(double sum, double weight) {
  return weight > 0 ? sum / weight : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

GpuMetricsReport SummarizeGpuMetrics(const CompactTrace& t, uint64_t from, uint64_t to) {
  GpuMetricsReport r;
  const GpuMetricSeries& series = t.gpu_metrics();
  r.samples = series.rows();
  r.merged = series.merged();
  if (series.series().empty()) return r;
  const model::Trace& meta = t.meta();
  auto column_of = [&](const model::GpuMetric* m, uint32_t id) {
    std::string name =
        m ? std::string(meta.strings.Get(m->name_id)) : "metric " + std::to_string(id);
    for (size_t c = 0; c < r.columns.size(); ++c)
      if (r.columns[c] == name) return c;
    r.columns.push_back(name);
    r.labels.emplace_back(m ? meta.strings.Get(m->label_id) : "");
    r.units.emplace_back(m ? meta.strings.Get(m->unit_id) : "");
    return r.columns.size() - 1;
  };
  const auto segments = KernelSegments(t, from, to);
  // Kernel name id -> sums per column.
  std::unordered_map<uint32_t, std::vector<Sums>> sums;
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> times;  // alone, shared ns
  for (const auto& [key, d] : segments)
    for (const Segment& s : d.segments)
      for (uint32_t i = 0; i < s.count; ++i) {
        if (d.names[s.first + i] == kNone) continue;
        auto& [alone, shared] = times[d.names[s.first + i]];
        (s.count == 1 ? alone : shared) += s.end - s.begin;
      }
  for (const auto& [key, points] : series.series()) {
    const model::GpuMetric* m = model::FindGpuMetric(meta, key.pid, key.metric);
    const size_t column = column_of(m, key.metric);
    GpuMetricStat stat;
    stat.pid = key.pid;
    stat.device = key.device;
    stat.name = r.columns[column];
    stat.label = r.labels[column];
    stat.unit = r.units[column];
    double sum = 0;
    auto seg_it = segments.find({key.pid, key.device});
    const DeviceSegments* d = seg_it == segments.end() ? nullptr : &seg_it->second;
    size_t si = 0;
    for (const GpuMetricSeries::Point& p : points) {
      const uint64_t b = std::max(p.start_ns, from), e = std::min(p.end_ns, to);
      if (e <= b) continue;
      if (!std::isfinite(p.value)) continue;
      ++stat.samples;
      stat.covered_ns += e - b;
      sum += p.value * double(e - b);
      stat.max = stat.samples == 1 ? p.value : std::max(stat.max, p.value);
      if (!d) continue;
      while (si < d->segments.size() && d->segments[si].end <= b) ++si;
      for (size_t k = si; k < d->segments.size() && d->segments[k].begin < e; ++k) {
        const Segment& s = d->segments[k];
        const double w = double(std::min(e, s.end) - std::max(b, s.begin));
        if (w <= 0) continue;
        for (uint32_t i = 0; i < s.count; ++i) {
          const uint32_t name = d->names[s.first + i];
          if (name == kNone) continue;
          std::vector<Sums>& v = sums[name];
          if (v.size() <= column) v.resize(column + 1);
          if (s.count == 1) {
            v[column].alone += p.value * w;
            v[column].alone_w += w;
          } else {
            v[column].shared += p.value * w;
            v[column].shared_w += w;
          }
        }
      }
    }
    stat.mean = stat.covered_ns ? sum / double(stat.covered_ns) : 0;
    if (stat.samples) r.metrics.push_back(std::move(stat));
  }
  for (const auto& [name, t_ns] : times) {
    GpuMetricKernel k;
    k.name = std::string(t.String(name));
    k.alone_ns = t_ns.first;
    k.shared_ns = t_ns.second;
    std::vector<Sums> v = sums.count(name) ? sums.at(name) : std::vector<Sums>{};
    v.resize(r.columns.size());
    for (const Sums& s : v) {
      k.alone.push_back(Mean(s.alone, s.alone_w));
      k.shared.push_back(Mean(s.shared, s.shared_w));
    }
    r.kernels.push_back(std::move(k));
  }
  std::sort(r.kernels.begin(), r.kernels.end(),
            [](const GpuMetricKernel& a, const GpuMetricKernel& b) {
              const uint64_t ta = a.alone_ns + a.shared_ns, tb = b.alone_ns + b.shared_ns;
              return ta != tb ? ta > tb : a.name < b.name;
            });
  return r;
}

void AddGpuMetricSteps(const CompactTrace& t, const StepReport& steps, GpuMetricsReport* r) {
  r->steps.clear();
  if (steps.steps.empty() || r->columns.empty()) return;
  const model::Trace& meta = t.meta();
  std::vector<std::vector<Sums>> sums(steps.steps.size(), std::vector<Sums>(r->columns.size()));
  for (const auto& [key, points] : t.gpu_metrics().series()) {
    const model::GpuMetric* m = model::FindGpuMetric(meta, key.pid, key.metric);
    const std::string name =
        m ? std::string(meta.strings.Get(m->name_id)) : "metric " + std::to_string(key.metric);
    const auto col = std::find(r->columns.begin(), r->columns.end(), name);
    if (col == r->columns.end()) continue;
    const size_t c = size_t(col - r->columns.begin());
    size_t si = 0;  // steps and points both in time order
    for (const GpuMetricSeries::Point& p : points) {
      if (!std::isfinite(p.value)) continue;
      while (si < steps.steps.size() && steps.steps[si].end_ns <= p.start_ns) ++si;
      for (size_t k = si; k < steps.steps.size() && steps.steps[k].begin_ns < p.end_ns; ++k) {
        const Step& st = steps.steps[k];
        const double w = double(std::min(p.end_ns, st.end_ns) - std::max(p.start_ns, st.begin_ns));
        if (w <= 0) continue;
        sums[k][c].alone += p.value * w;
        sums[k][c].alone_w += w;
      }
    }
  }
  for (size_t k = 0; k < steps.steps.size(); ++k) {
    GpuMetricStep step;
    step.number = steps.first_number + uint32_t(k);
    step.ns = steps.steps[k].ns();
    for (const Sums& s : sums[k]) step.values.push_back(Mean(s.alone, s.alone_w));
    r->steps.push_back(std::move(step));
  }
}

}  // namespace tracesmith::analysis
