#include "tracesmith/report/timeline_bins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "tracesmith/base/status.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/model/process_rank.h"

namespace tracesmith::report {
namespace {

std::string DeviceGroup(const model::Trace& meta, uint32_t pid, uint32_t device, bool per_process) {
  std::string name;
  for (const model::Device& d : meta.Rows<model::Device>())
    if (d.device_id == device && (d.pid == pid || d.pid == 0)) {
      name = std::string(meta.strings.Get(d.name_id));
      if (d.pid == pid) break;
    }
  std::string group =
      name.empty() ? StrFormat("GPU %u", device) : StrFormat("GPU %u (%s)", device, name.c_str());
  if (!per_process) return group;
  for (const model::Process& p : meta.Rows<model::Process>())
    if (p.pid == pid) {
      if (auto rank = model::KnownRank(p))
        return StrFormat("rank %d (pid %u) ", *rank, pid) + group;
      break;
    }
  return StrFormat("pid %u ", pid) + group;
}

using CounterPoints = std::vector<const analysis::AppCounterPoint*>;  // in time order

// The program's counters by (name, pid) that hold a value in the window
// (before `end`): a sample inside, or one before it, held into the window.
std::map<std::pair<std::string, uint32_t>, CounterPoints> CountersBefore(
    const analysis::CompactTrace& t, uint64_t end) {
  std::map<std::pair<std::string, uint32_t>, CounterPoints> by_name;
  for (const analysis::AppCounterPoint& p : t.app_counters())
    if (p.ts_ns < end) by_name[{std::string(t.String(p.name_id)), p.pid}].push_back(&p);
  return by_name;
}

// Rounded to 6 significant digits: the page draws and shows them, and the
// page stays small (analyze --json has them exactly).
double Shown(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return std::strtod(text, nullptr);
}

// A row of bins with no value yet (NaN); SetBin fills one.
template <typename Bins>
Bins Unset(std::string name, uint32_t pid, uint32_t bins) {
  Bins c;
  c.name = std::move(name);
  c.pid = pid;
  c.lo.assign(bins, std::numeric_limits<double>::quiet_NaN());
  c.hi = c.lo;
  c.min = std::numeric_limits<double>::infinity();
  c.max = -c.min;
  return c;
}

void SetBin(CounterBins* c, uint32_t b, double lo, double hi) {
  c->lo[b] = Shown(lo);
  c->hi[b] = Shown(hi);
  if (!std::isnan(lo)) c->min = std::min(c->min, c->lo[b]);
  if (!std::isnan(hi)) c->max = std::max(c->max, c->hi[b]);
}

template <typename Edge>
CounterBins BinCounter(const std::string& name, uint32_t pid, const CounterPoints& points,
                       uint64_t begin, uint32_t bins, Edge edge) {
  CounterBins c = Unset<CounterBins>(name, pid, bins);
  double held = std::numeric_limits<double>::quiet_NaN();
  size_t i = 0;
  while (i < points.size() && points[i]->ts_ns < begin) held = points[i++]->value;
  for (uint32_t b = 0; b < bins; ++b) {
    double lo = held, hi = held;
    const uint64_t stop = edge(b + 1);
    for (; i < points.size() && points[i]->ts_ns < stop; ++i) {
      held = points[i]->value;
      ++c.values;
      lo = std::isnan(lo) ? held : std::min(lo, held);
      hi = std::isnan(hi) ? held : std::max(hi, held);
    }
    SetBin(&c, b, lo, hi);
  }
  return c;
}

using MetricSeries = std::map<analysis::GpuMetricSeries::Key,
                              std::vector<analysis::GpuMetricSeries::Point>>::const_iterator;

// The GPU metric series with a sample overlapping [begin, end) (for some time:
// BinMetric leaves out a sample of no length).
std::vector<MetricSeries> MetricsIn(const analysis::CompactTrace& t, uint64_t begin, uint64_t end) {
  std::vector<MetricSeries> out;
  const auto& series = t.gpu_metrics().series();
  for (auto it = series.begin(); it != series.end(); ++it)
    for (const analysis::GpuMetricSeries::Point& p : it->second)
      if (std::max(p.start_ns, begin) < std::min(p.end_ns, end) && std::isfinite(p.value)) {
        out.push_back(it);
        break;
      }
  return out;
}

// "GPU 0 · DRAM throughput (%)": the metric's label (else its CUPTI name) and unit.
GpuMetricBins MetricRow(const model::Trace& meta, const analysis::GpuMetricSeries::Key& key,
                        bool per_process, uint32_t bins) {
  const model::GpuMetric* m = model::FindGpuMetric(meta, key.pid, key.metric);
  const std::string metric =
      m ? std::string(meta.strings.Get(m->name_id)) : StrFormat("metric %u", key.metric);
  const std::string label = m ? std::string(meta.strings.Get(m->label_id)) : "";
  const std::string unit = m ? std::string(meta.strings.Get(m->unit_id)) : "";
  std::string name = per_process ? StrFormat("pid %u GPU %u", key.pid, key.device)
                                 : StrFormat("GPU %u", key.device);
  name += " \u00b7 " + (label.empty() ? metric : label) + (unit.empty() ? "" : " (" + unit + ")");
  GpuMetricBins g = Unset<GpuMetricBins>(std::move(name), key.pid, bins);
  g.device = key.device;
  g.metric = metric;
  g.unit = unit;
  g.mean.assign(bins, std::numeric_limits<double>::quiet_NaN());
  return g;
}

// Each sample adds its value, weighted by its overlap with the bin, to every
// bin it overlaps: per bin the time-weighted mean, and the lowest and highest
// sample.
template <typename Edge, typename BinOf>
void BinMetric(const std::vector<analysis::GpuMetricSeries::Point>& points, uint64_t begin,
               uint64_t end, Edge edge, BinOf bin_of, GpuMetricBins* g) {
  const size_t bins = g->lo.size();
  std::vector<double> sum(bins), weight(bins), lo = g->lo, hi = g->hi;
  for (const analysis::GpuMetricSeries::Point& p : points) {
    uint64_t s = std::max(p.start_ns, begin);
    const uint64_t e = std::min(p.end_ns, end);
    if (e <= s || !std::isfinite(p.value)) continue;
    ++g->values;
    for (uint64_t b = bin_of(s); s < e; ++b) {
      const uint64_t stop = std::min(e, edge(b + 1));
      if (stop > s) {
        sum[b] += p.value * double(stop - s);
        weight[b] += double(stop - s);
        lo[b] = std::isnan(lo[b]) ? p.value : std::min(lo[b], p.value);
        hi[b] = std::isnan(hi[b]) ? p.value : std::max(hi[b], p.value);
      }
      s = stop;
    }
  }
  for (uint32_t b = 0; b < bins; ++b) {
    SetBin(g, b, lo[b], hi[b]);
    if (weight[b] > 0) g->mean[b] = Shown(sum[b] / weight[b]);
  }
}

}  // namespace

TimelineBins ComputeTimelineBins(const analysis::CompactTrace& t, uint32_t bins) {
  TimelineBins out;
  out.begin_ns = t.window_begin();
  out.end_ns = std::max(t.window_end(), t.window_begin() + 1);
  const auto counters = CountersBefore(t, out.end_ns);
  const size_t ncounters = std::min(counters.size(), kMaxTimelineCounters);
  out.counters_omitted = uint32_t(counters.size() - ncounters);
  const std::vector<MetricSeries> metrics = MetricsIn(t, out.begin_ns, out.end_ns);
  const size_t nmetrics = std::min(metrics.size(), kMaxTimelineGpuMetrics);
  out.gpu_metrics_omitted = uint32_t(metrics.size() - nmetrics);
  const size_t nseries = std::max<size_t>(1, t.gpu_lanes().size() + 2 * ncounters + 3 * nmetrics);
  bins = std::max<uint32_t>(1, bins);
  bins = uint32_t(std::max<uint64_t>(1, std::min<uint64_t>(bins, kMaxBinValues / nseries)));
  out.bins = bins;
  const uint64_t span = out.end_ns - out.begin_ns;
  // Bin b covers [begin + span*b/bins, begin + span*(b+1)/bins): exact
  // integer edges, so the bins tile the window with no gap or overlap.
  auto edge = [&](uint64_t b) {
    return out.begin_ns + uint64_t((unsigned __int128)span * b / bins);
  };
  auto bin_of = [&](uint64_t ts) {  // the bin holding ts (ts inside the window)
    uint64_t b = uint64_t((unsigned __int128)(ts - out.begin_ns) * bins / span);
    while (b > 0 && edge(b) > ts) --b;
    while (b + 1 < bins && edge(b + 1) <= ts) ++b;
    return b;
  };
  std::set<uint32_t> pids;
  for (uint32_t lane : t.gpu_lanes()) pids.insert(t.lanes()[lane].pid);
  for (const MetricSeries& m : metrics) pids.insert(m->first.pid);
  const bool per_process = pids.size() > 1;
  std::vector<uint64_t> busy(bins);
  for (uint32_t lane : t.gpu_lanes()) {
    const analysis::Lane& l = t.lanes()[lane];
    LaneBins lb;
    lb.pid = l.pid;
    lb.device = l.device;
    lb.stream = l.stream;
    lb.group = DeviceGroup(t.meta(), l.pid, l.device, per_process);
    lb.name = StrFormat("stream %u", l.stream);
    std::fill(busy.begin(), busy.end(), 0);
    // Ops of a lane are in start order; concurrent ones (a lane rarely has
    // them) are counted once: each op adds only what lies past the furthest
    // end seen so far.
    uint64_t covered = out.begin_ns;
    const analysis::LaneRange r = t.lane_range(lane);
    for (uint32_t i = r.begin; i < r.end; ++i) {
      const analysis::GpuOp op = t.ops()[i];
      uint64_t s = std::max({op.start_ns, out.begin_ns, covered});
      const uint64_t e = std::min(op.end_ns, out.end_ns);
      if (op.end_ns > out.begin_ns && op.start_ns < out.end_ns) lb.ops++;
      if (e <= s) continue;
      covered = e;
      lb.busy_ns += e - s;
      for (uint64_t b = bin_of(s); s < e; ++b) {
        const uint64_t stop = std::min(e, edge(b + 1));
        busy[b] += stop - s;
        s = stop;
      }
    }
    lb.busy_permille.resize(bins);
    for (uint32_t b = 0; b < bins; ++b) {
      const uint64_t width = edge(b + 1) - edge(b);
      lb.busy_permille[b] = width ? uint16_t((busy[b] * 1000 + width / 2) / width) : uint16_t(0);
    }
    out.lanes.push_back(std::move(lb));
  }
  for (const auto& [key, points] : counters) {
    if (out.counters.size() == ncounters) break;
    out.counters.push_back(BinCounter(key.first, key.second, points, out.begin_ns, bins, edge));
  }
  for (size_t i = 0; i < nmetrics; ++i) {
    out.gpu_metrics.push_back(MetricRow(t.meta(), metrics[i]->first, per_process, bins));
    BinMetric(metrics[i]->second, out.begin_ns, out.end_ns, edge, bin_of, &out.gpu_metrics.back());
  }
  return out;
}

}  // namespace tracesmith::report
