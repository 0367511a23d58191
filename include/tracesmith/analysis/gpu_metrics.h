// GPU hardware metrics over time (GpuMetricSample rows, `profile
// --gpu-metrics`): what `analyze` says of the series a compact trace keeps
// (timeline/gpu_metric_series.h).
//
// Per kernel name: the time-weighted mean of each metric over the samples'
// overlap with the time that kernel ran alone on its GPU ("alone"), and
// apart from it over the time it ran beside other kernels on that GPU
// ("shared": the metric then measures them all together, which the report
// says). A device's metrics count for the kernels of that device only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tracesmith::analysis {

class CompactTrace;  // timeline/compact_trace.h

// One metric of one device over the analysed window.
struct GpuMetricStat {
  uint32_t pid = 0, device = 0;
  std::string name, label, unit;  // CUPTI's name, its short name ("" when none), unit
  double mean = 0, max = 0;       // time-weighted mean; largest sample
  uint64_t samples = 0;           // samples overlapping the window
  uint64_t covered_ns = 0;        // the window's time they cover
};

// A kernel name's metrics. alone / shared: one value per report column
// (GpuMetricsReport::columns), NaN when no sample overlapped that time.
struct GpuMetricKernel {
  std::string name;
  uint64_t alone_ns = 0, shared_ns = 0;  // GPU time alone on its device / beside other kernels
  std::vector<double> alone, shared;
};

// One step's metrics: per report column, the time-weighted mean of every
// sample of that metric (all devices) over the step; NaN: no sample.
struct GpuMetricStep {
  uint32_t number = 0;  // as the steps report numbers it
  uint64_t ns = 0;      // the step's wall time
  std::vector<double> values;
};

struct GpuMetricsReport {
  std::vector<GpuMetricStat> metrics;  // by pid, device, then the capture's metric order
  // The kernel rows' columns: each metric by its CUPTI name (the same name in
  // several processes or devices is one column), with a label and unit.
  std::vector<std::string> columns, labels, units;
  std::vector<GpuMetricKernel> kernels;  // by GPU time, longest first
  std::vector<GpuMetricStep> steps;      // AddGpuMetricSteps; empty without steps
  uint64_t samples = 0;                  // GpuMetricSample rows of the trace
  uint32_t merged = 1;                   // GpuMetricSeries::merged()
  bool empty() const { return metrics.empty(); }
};

// The report over [from, to) (the analysis window) of the trace's series and
// kernels.
GpuMetricsReport SummarizeGpuMetrics(const CompactTrace& trace, uint64_t from, uint64_t to);

struct StepReport;  // steps.h
// Each step's metrics into r->steps (r from SummarizeGpuMetrics).
void AddGpuMetricSteps(const CompactTrace& trace, const StepReport& steps, GpuMetricsReport* r);

// A column's heading: its label, else its CUPTI name.
inline const std::string& GpuMetricHeading(const GpuMetricsReport& r, size_t column) {
  return r.labels[column].empty() ? r.columns[column] : r.labels[column];
}

}  // namespace tracesmith::analysis
