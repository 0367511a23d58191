// Findings from the GPU metrics (findings.h, rule 15): for each kernel name
// with at least 5% of the GPU time that ran alone on its GPU for at least
// half of it, what its metrics say while alone: DRAM at >= 60% of peak
// (memory-bound), tensor pipes >= 50% active, or, where SM throughput was
// sampled, SM throughput and DRAM both under 30% (neither unit kept busy).
// The columns are recognised by their CUPTI names (capture/gpu_metric_set.cc's
// default set, and Nsight Compute's names for the same counters).
#include <cmath>
#include <string_view>

#include "findings.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith::analysis {
namespace {

constexpr double kMinGpuShare = 5.0;      // % of GPU time
constexpr double kMemoryBoundPct = 60.0;  // DRAM throughput, % of peak
constexpr double kTensorBusyPct = 50.0;   // tensor pipe active
constexpr double kIdleUnitsPct = 30.0;    // SM throughput and DRAM both under it

// The column whose CUPTI name holds one of `parts` and is a percentage; -1: none.
int Column(const GpuMetricsReport& g, std::initializer_list<std::string_view> parts) {
  for (size_t c = 0; c < g.columns.size(); ++c) {
    if (g.units[c] != "%" && g.columns[c].find("pct") == std::string::npos) continue;
    for (std::string_view p : parts)
      if (g.columns[c].find(p) != std::string::npos) return int(c);
  }
  return -1;
}

double At(const std::vector<double>& v, int c) {
  return c < 0 || size_t(c) >= v.size() ? NAN : v[size_t(c)];
}

}  // namespace

void AddGpuMetricFindings(const AnalysisReport& r, std::vector<Finding>* out) {
  const GpuMetricsReport& g = r.gpu_metrics;
  if (g.kernels.empty() || r.kernel_ns == 0) return;
  const int dram = Column(g, {"dramc__throughput", "dram__throughput"});
  const int tensor = Column(g, {"pipe_tensor"});
  const int sm = Column(g, {"sm__inst_executed_realtime", "sm__throughput"});
  for (const GpuMetricKernel& k : g.kernels) {
    const uint64_t ns = k.alone_ns + k.shared_ns;
    const double share = Percent(ns, r.kernel_ns);
    if (share < kMinGpuShare || 2 * k.alone_ns < ns) continue;
    const std::string name = k.name.size() > 80 ? k.name.substr(0, 77) + "..." : k.name;
    const std::string head =
        StrFormat("Kernel %s (%.1f%% of GPU time, alone on its GPU %.0f%% of it)", name.c_str(),
                  share, Percent(k.alone_ns, ns));
    const double d = At(k.alone, dram), t = At(k.alone, tensor), s = At(k.alone, sm);
    if (d >= kMemoryBoundPct)
      out->push_back({share / 100, StrFormat("%s ran DRAM at %.0f%% of its peak bandwidth: "
                                             "memory-bound; fewer bytes moved (fusion, lower "
                                             "precision, reuse through shared memory) speed it up.",
                                             head.c_str(), d)});
    else if (t >= kTensorBusyPct)
      out->push_back({share / 100, StrFormat("%s kept the tensor pipes %.0f%% active: it runs on "
                                             "tensor cores near their capacity.",
                                             head.c_str(), t)});
    else if (s < kIdleUnitsPct && d < kIdleUnitsPct)
      out->push_back(
          {share / 100, StrFormat("%s kept neither the SMs (throughput %.0f%% of peak) nor DRAM "
                                  "(%.0f%%) busy: latency-bound (too few threads or blocks, "
                                  "dependent instructions, or waits); `replay --metrics` and "
                                  "`--pc-sampling` say more.",
                                  head.c_str(), s, d)});
  }
}

}  // namespace tracesmith::analysis
