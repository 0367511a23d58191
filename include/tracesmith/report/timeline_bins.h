// The report's timeline overview: how busy each GPU stream was, per bin of
// the analysis window. A page cannot hold every op of a 10 M-event trace, so
// the ops are reduced to a fixed number of bins per lane (the busy fraction:
// the union of the lane's ops inside the bin over the bin's width); zooming
// in the page re-aggregates these bins, and the hint beside it points to the
// Perfetto export for single ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::report {

struct LaneBins {
  std::string group;  // "GPU 0 (NVIDIA H100)"; with several processes, the rank or pid first
  std::string name;   // "stream 7"
  uint32_t pid = 0, device = 0, stream = 0;
  uint64_t busy_ns = 0;                 // union of the lane's ops in the window
  uint64_t ops = 0;                     // ops overlapping the window
  std::vector<uint16_t> busy_permille;  // per bin, 0..1000
};

// The program's own counter (tracesmith.counter, app.h) in the same bins, drawn
// under the streams and zoomed with them. A counter holds its value until the
// next sample, so a bin's range is the value held at its start (the last
// sample before it) together with the samples inside it; NaN before the first.
struct CounterBins {
  std::string name;
  uint32_t pid = 0;
  uint64_t values = 0;         // samples inside the window
  double min = 0, max = 0;     // of lo and hi over the bins
  std::vector<double> lo, hi;  // per bin: the lowest and highest value held in it
};

// A GPU hardware metric (GpuMetricSample rows, `profile --gpu-metrics`) of one
// (pid, device) in the same bins: per bin the time-weighted mean of the
// samples overlapping it (weighted by their overlap) and, in lo and hi, the
// lowest and highest of them; NaN where no sample covers the bin. name is the
// row's label: "GPU 0 · DRAM throughput (%)" (the pid first with several
// processes); min and max as for a counter.
struct GpuMetricBins : CounterBins {
  uint32_t device = 0;
  std::string metric, unit;  // CUPTI's name; its unit ("%", "bytes/s"; "" when unknown)
  std::vector<double> mean;
};

struct TimelineBins {
  uint64_t begin_ns = 0, end_ns = 0;  // the analysis window (absolute)
  uint32_t bins = 0;
  std::vector<LaneBins> lanes;             // GPU lanes by (pid, device, stream)
  std::vector<CounterBins> counters;       // by (name, pid); those holding a value in the window
  uint32_t counters_omitted = 0;           // past kMaxTimelineCounters
  std::vector<GpuMetricBins> gpu_metrics;  // by (pid, device, the capture's metric order)
  uint32_t gpu_metrics_omitted = 0;        // past kMaxTimelineGpuMetrics
};

// `bins` per lane, counter and metric (at least 1); with many lanes fewer, so
// that the page's data stays under ~1 M numbers (kMaxBinValues; a counter
// counts twice, a GPU metric three times). Metrics: 8 GPUs of 3 at most.
inline constexpr uint64_t kMaxBinValues = 1'000'000;
inline constexpr size_t kMaxTimelineCounters = 16;
inline constexpr size_t kMaxTimelineGpuMetrics = 24;
TimelineBins ComputeTimelineBins(const analysis::CompactTrace& trace, uint32_t bins);

}  // namespace tracesmith::report
