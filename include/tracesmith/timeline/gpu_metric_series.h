// GPU hardware metrics over time (GpuMetricSample rows, `profile
// --gpu-metrics`): the series a compact trace keeps while a trace streams in
// (CompactTrace::gpu_metrics()). What `analyze` says of them is analysis/'s
// (analysis/gpu_metrics.h).
//
// Series: the samples of each (pid, device, metric), kept as they arrive in
// bounded memory: past kMaxPoints points every series is coarsened (two
// neighbouring samples merged into one, time-weighted), and the report says
// by how much (merged()).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

class GpuMetricSeries {
 public:
  struct Point {
    uint64_t start_ns = 0, end_ns = 0;
    double value = 0;
  };
  struct Key {
    uint32_t pid = 0, device = 0, metric = 0;  // metric: the GpuMetric row's id in the pid
    auto operator<=>(const Key&) const = default;
  };
  static constexpr size_t kMaxPoints = size_t{1} << 22;  // 96 MB of points

  void Add(const std::vector<model::GpuMetricSample>& rows);
  // Sorts every series by time (after the clocks are aligned).
  void Sort();
  const std::map<Key, std::vector<Point>>& series() const { return series_; }
  std::map<Key, std::vector<Point>>& mutable_series() { return series_; }
  uint64_t rows() const { return rows_; }
  // Samples merged into one point at most (1: every sample kept as it was;
  // each coarsening doubles it, the rows after it arrive whole).
  uint32_t merged() const { return merged_; }

 private:
  void Coarsen();
  std::map<Key, std::vector<Point>> series_;
  size_t points_ = 0;
  uint64_t rows_ = 0;
  uint32_t merged_ = 1;
};

}  // namespace tracesmith::analysis
