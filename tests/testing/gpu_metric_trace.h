// A hand-built trace with GPU metric samples (GpuMetricSample, GpuMetric) for
// the tests of the format, the analysis, the exporters and Python: what
// `profile --gpu-metrics` writes, with figures known in advance.
//
// Process 100, device 0; kernels on streams 7 and 8:
//   copy  [1000, 2000)  stream 7, alone
//   gemm  [3000, 5000)  stream 7; alone until 4000, then beside fma
//   fma   [4000, 6000)  stream 8; alone from 5000
//   idle  [2000, 3000) and [6000, 8000)
// Metrics (ids 1..3): SM active %, tensor pipe active %, DRAM throughput %,
// one sample per metric every `period_ns` from 1000 to 8000 whose value is
// the phase's (below) at the sample's middle:
//   phase           SM   tensor  DRAM
//   copy alone      90     0      85
//   gemm alone      95    70      20
//   gemm + fma     100    50      30
//   fma alone       90     0       5
//   idle             0     0       0
#pragma once

#include <cstdint>
#include <string>

#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

struct GpuMetricTraceOptions {
  uint64_t period_ns = 100;  // sample length; 1000 divides by it for exact phases
  uint32_t pid = 100;
  bool descriptions = true;  // false: no GpuMetric rows (names unknown)
  // The program's step ranges "step 1..3": [1000, 3000), [3000, 5000), [5000, 8000).
  bool steps = false;
};

struct GpuMetricPhase {
  uint64_t from, to;
  double sm, tensor, dram;
};
inline constexpr GpuMetricPhase kGpuMetricPhases[] = {
    {1000, 2000, 90, 0, 85},   {2000, 3000, 0, 0, 0},  {3000, 4000, 95, 70, 20},
    {4000, 5000, 100, 50, 30}, {5000, 6000, 90, 0, 5}, {6000, 8000, 0, 0, 0},
};

inline model::Trace GpuMetricTrace(const GpuMetricTraceOptions& o = {}) {
  model::Trace t;
  auto str = [&](const std::string& s) { return t.strings.Intern(s); };
  auto kernel = [&](const std::string& name, uint64_t from, uint64_t to, uint32_t stream) {
    model::KernelEvent k{};
    k.start_ns = from;
    k.end_ns = to;
    k.pid = o.pid;
    k.device_id = 0;
    k.stream_id = stream;
    k.correlation_id = static_cast<uint32_t>(t.Rows<model::KernelEvent>().size() + 1);
    k.name_id = str(name);
    t.Rows<model::KernelEvent>().push_back(k);
  };
  if (o.steps)
    for (uint64_t s = 0; s < 3; ++s) {
      const uint64_t bounds[] = {1000, 3000, 5000, 8000};
      model::AppEvent step{};
      step.start_ns = bounds[s];
      step.end_ns = bounds[s + 1];
      step.pid = o.pid;
      step.tid = 1;
      step.name_id = str("step " + std::to_string(s + 1));
      step.kind = model::kAppRange;
      t.Rows<model::AppEvent>().push_back(step);
    }
  kernel("copy", 1000, 2000, 7);
  kernel("gemm", 3000, 5000, 7);
  kernel("fma", 4000, 6000, 8);
  model::Device d{};
  d.device_id = 0;
  d.pid = o.pid;
  d.name_id = str("NVIDIA H200");
  t.Rows<model::Device>().push_back(d);
  const char* names[][3] = {
      {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "SM active", "%"},
      {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "Tensor pipe active",
       "%"},
      {"dramc__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput", "%"},
  };
  if (o.descriptions)
    for (uint32_t m = 0; m < 3; ++m) {
      model::GpuMetric g{};
      g.metric_id = m + 1;
      g.pid = o.pid;
      g.name_id = str(names[m][0]);
      g.label_id = str(names[m][1]);
      g.unit_id = str(names[m][2]);
      t.Rows<model::GpuMetric>().push_back(g);
    }
  for (uint64_t s = 1000; s < 8000; s += o.period_ns) {
    const uint64_t mid = s + o.period_ns / 2;
    for (const GpuMetricPhase& p : kGpuMetricPhases) {
      if (mid < p.from || mid >= p.to) continue;
      const double values[] = {p.sm, p.tensor, p.dram};
      for (uint32_t m = 0; m < 3; ++m) {
        model::GpuMetricSample e{};
        e.start_ns = s;
        e.end_ns = s + o.period_ns;
        e.value = values[m];
        e.pid = o.pid;
        e.device_id = 0;
        e.metric_id = m + 1;
        t.Rows<model::GpuMetricSample>().push_back(e);
      }
    }
  }
  return t;
}

}  // namespace tracesmith::testing
