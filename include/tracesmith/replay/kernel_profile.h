// Hardware counters of one replayed launch (`tracesmith replay --metrics`,
// issue #40 item 3): what CUPTI's range profiler measured on the GPU (as many
// passes as the set needs, the launch's inputs restored before each by
// CUPTI's kernel replay) and what follows from it: throughputs as % of peak,
// achieved occupancy, DRAM bytes, FLOPs by precision, L2 hit rate, arithmetic
// intensity and a roofline verdict. The names are Nsight Compute's, so a
// value compares with `ncu --metrics NAME` on the same kernel.
//
// CPU code (compare.cc's text, replay_json.cc's object); the measuring is in
// replay/gpu/kernel_profiler.cc.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace tracesmith::replay {

// The default set (--metrics without a list), each with the meaning the
// derivation gives it.
inline constexpr const char* kMetricDuration = "gpu__time_duration.sum";  // ns
inline constexpr const char* kMetricSmThroughput =
    "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricMemThroughput =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricDramThroughput =
    "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMetricOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kMetricDramRead = "dram__bytes_read.sum";
inline constexpr const char* kMetricDramWrite = "dram__bytes_write.sum";
inline constexpr const char* kMetricL2Hit = "lts__t_sector_hit_rate.pct";
inline constexpr const char* kMetricTensor =
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed";
// Thread-level floating-point instructions (an FMA counts two FLOPs), as
// Nsight Compute's roofline counts them.
inline constexpr const char* kMetricFp32Fma = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr const char* kMetricFp32Add = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr const char* kMetricFp32Mul = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr const char* kMetricFp64Fma = "sm__sass_thread_inst_executed_op_dfma_pred_on.sum";
inline constexpr const char* kMetricFp64Add = "sm__sass_thread_inst_executed_op_dadd_pred_on.sum";
inline constexpr const char* kMetricFp64Mul = "sm__sass_thread_inst_executed_op_dmul_pred_on.sum";
inline constexpr const char* kMetricFp16Fma = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum";
inline constexpr const char* kMetricFp16Add = "sm__sass_thread_inst_executed_op_hadd_pred_on.sum";
inline constexpr const char* kMetricFp16Mul = "sm__sass_thread_inst_executed_op_hmul_pred_on.sum";

const std::vector<std::string>& DefaultKernelMetrics();

// --metrics' value: "" is the default set, else comma-separated names
// (spaces trimmed, empty items and repeats dropped, order kept).
std::vector<std::string> ParseKernelMetrics(std::string_view text);

// A verdict needs one of the two units at this share of its peak; below it
// in both, the kernel is latency-bound (neither unit was kept busy).
inline constexpr double kRooflineBusyPct = 60.0;

struct KernelMetricValue {
  std::string name;
  double value = NAN;
};

struct KernelProfile {
  bool requested = false;                 // --metrics was given
  bool measured = false;                  // values below came from the GPU
  std::string error;                      // why not (requested, not measured)
  uint32_t passes = 0;                    // CUPTI's passes for the set
  std::vector<std::string> dropped;       // names the GPU's profiler did not accept
  std::vector<KernelMetricValue> values;  // as measured, in the set's order

  // Derived (DeriveKernelProfile); NaN where a metric it needs is missing.
  double duration_ns = NAN, sm_pct = NAN, memory_pct = NAN, occupancy_pct = NAN;
  double dram_bytes = NAN, dram_pct = NAN, l2_hit_pct = NAN, tensor_pct = NAN;
  double flops_fp32 = NAN, flops_fp64 = NAN, flops_fp16 = NAN;
  double intensity = NAN;  // all FLOPs per DRAM byte (tensor-core work not counted)
  // "memory-bound", "compute-bound", "latency-bound"; "" without the two
  // throughputs. `why` says which figures decided it.
  std::string verdict, why;

  double Value(std::string_view name) const;  // NaN when not measured
};

// Fills the derived fields from `values`.
void DeriveKernelProfile(KernelProfile* p);

// The launch block's lines ("  metrics: ..."), "" when not requested.
std::string FormatKernelProfile(const KernelProfile& p);

}  // namespace tracesmith::replay
