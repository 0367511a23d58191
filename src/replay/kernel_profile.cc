#include "tracesmith/replay/kernel_profile.h"

#include <algorithm>

#include "tracesmith/base/file_util.h"
#include "tracesmith/base/status.h"

namespace tracesmith::replay {

const std::vector<std::string>& DefaultKernelMetrics() {
  static const std::vector<std::string> names = {
      kMetricDuration,  kMetricSmThroughput, kMetricMemThroughput, kMetricDramThroughput,
      kMetricOccupancy, kMetricDramRead,     kMetricDramWrite,     kMetricL2Hit,
      kMetricTensor,    kMetricFp32Fma,      kMetricFp32Add,       kMetricFp32Mul,
      kMetricFp64Fma,   kMetricFp64Add,      kMetricFp64Mul,       kMetricFp16Fma,
      kMetricFp16Add,   kMetricFp16Mul};
  return names;
}

std::vector<std::string> ParseKernelMetrics(std::string_view text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(at, comma - at);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end())
      out.emplace_back(item);
    at = comma + 1;
  }
  return out.empty() ? DefaultKernelMetrics() : out;
}

double KernelProfile::Value(std::string_view name) const {
  for (const KernelMetricValue& v : values)
    if (v.name == name) return v.value;
  return NAN;
}

namespace {

// 2 x FMA + add + mul; NaN only when none of the three was measured.
double Flops(const KernelProfile& p, const char* fma, const char* add, const char* mul) {
  const double f = p.Value(fma), a = p.Value(add), m = p.Value(mul);
  if (std::isnan(f) && std::isnan(a) && std::isnan(m)) return NAN;
  auto z = [](double v) { return std::isnan(v) ? 0.0 : v; };
  return 2 * z(f) + z(a) + z(m);
}

std::string Pct(double v) { return std::isnan(v) ? "?" : StrFormat("%.1f%%", v); }

}  // namespace

void DeriveKernelProfile(KernelProfile* p) {
  p->duration_ns = p->Value(kMetricDuration);
  p->sm_pct = p->Value(kMetricSmThroughput);
  p->memory_pct = p->Value(kMetricMemThroughput);
  p->occupancy_pct = p->Value(kMetricOccupancy);
  p->l2_hit_pct = p->Value(kMetricL2Hit);
  p->dram_pct = p->Value(kMetricDramThroughput);
  p->tensor_pct = p->Value(kMetricTensor);
  const double rd = p->Value(kMetricDramRead), wr = p->Value(kMetricDramWrite);
  p->dram_bytes = std::isnan(rd) || std::isnan(wr) ? NAN : rd + wr;
  p->flops_fp32 = Flops(*p, kMetricFp32Fma, kMetricFp32Add, kMetricFp32Mul);
  p->flops_fp64 = Flops(*p, kMetricFp64Fma, kMetricFp64Add, kMetricFp64Mul);
  p->flops_fp16 = Flops(*p, kMetricFp16Fma, kMetricFp16Add, kMetricFp16Mul);
  double flops = 0;
  bool any = false;
  for (double f : {p->flops_fp32, p->flops_fp64, p->flops_fp16})
    if (!std::isnan(f)) flops += f, any = true;
  p->intensity = any && p->dram_bytes > 0 ? flops / p->dram_bytes : NAN;
  p->verdict.clear();
  p->why.clear();
  if (std::isnan(p->sm_pct) || std::isnan(p->memory_pct)) return;
  const std::string figures =
      "SM " + Pct(p->sm_pct) + ", memory " + Pct(p->memory_pct) + " of peak";
  if (p->memory_pct >= kRooflineBusyPct && p->memory_pct > p->sm_pct) {
    p->verdict = "memory-bound";
    p->why = figures + ": the memory system is the busier unit";
  } else if (p->sm_pct >= kRooflineBusyPct) {
    p->verdict = "compute-bound";
    p->why = figures + ": the SMs are the busier unit";
  } else {
    p->verdict = "latency-bound";
    p->why = figures + StrFormat(": neither reaches %.0f%% (too little parallelism, or waits)",
                                 kRooflineBusyPct);
  }
}

std::string FormatKernelProfile(const KernelProfile& p) {
  if (!p.requested) return "";
  if (!p.measured) return "  metrics: not measured: " + p.error + "\n";
  std::string s = StrFormat("  metrics (%u pass%s): ", p.passes, p.passes == 1 ? "" : "es");
  if (!std::isnan(p.duration_ns)) s += StrFormat("duration %.2f us, ", p.duration_ns / 1000);
  s += "SM throughput " + Pct(p.sm_pct) + ", memory throughput " + Pct(p.memory_pct) +
       ", achieved occupancy " + Pct(p.occupancy_pct) + "\n";
  if (!std::isnan(p.dram_bytes) || !std::isnan(p.l2_hit_pct))
    s += "    DRAM " +
         (std::isnan(p.dram_bytes) ? std::string("?") : HumanBytes(uint64_t(p.dram_bytes))) + " (" +
         Pct(p.dram_pct) + " of peak bandwidth)" + ", L2 hit rate " + Pct(p.l2_hit_pct) +
         ", tensor pipe " + Pct(p.tensor_pct) + "\n";
  auto g = [](double f) { return std::isnan(f) ? std::string("?") : StrFormat("%.4g", f); };
  s += "    FLOPs: FP32 " + g(p.flops_fp32) + ", FP64 " + g(p.flops_fp64) + ", FP16 " +
       g(p.flops_fp16) + " (tensor cores not counted); arithmetic intensity " +
       (std::isnan(p.intensity) ? std::string("?") : StrFormat("%.3g FLOP/byte", p.intensity)) +
       "\n";
  if (!p.verdict.empty()) s += "    roofline: " + p.verdict + " (" + p.why + ")\n";
  if (!p.dropped.empty()) {
    std::string names;
    for (const std::string& n : p.dropped) names += (names.empty() ? "" : ", ") + n;
    s += "    not measured (the GPU's profiler does not know them): " + names + "\n";
  }
  return s;
}

}  // namespace tracesmith::replay
