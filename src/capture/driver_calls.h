// DriverCalls: driver API rows for the launches, copies, memsets and graph
// launches a program makes through the driver API itself (cuBLASLt, cuDNN,
// CUTLASS and Triton call cuLaunchKernel(Ex) directly), from the driver
// callbacks at the call's entry and exit.
//
// Why not CUPTI's DRIVER activity with every other driver API filtered out:
// while it is enabled CUPTI intercepts every driver entry point, which made
// each CUDA runtime call 100-400 ns slower on an H100 (docs/benchmarks.md).
//
// The callbacks also fire for the driver calls the runtime makes inside a
// cudaLaunchKernel or cudaMemcpyAsync, with the runtime call's correlation
// id. Those must not become rows of their own: the writer holds each call
// for one writer cycle (by then the runtime call has returned and CUPTI has
// delivered its RUNTIME record) and keeps only calls whose correlation id
// no runtime row has (ActivityConverter::IsRuntimeCall).
//
// Threads: OnEnter/OnExit on the application thread (no lock, no
// allocation); Collect on the writer.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <vector>

namespace tracesmith::capture {

struct DriverCall {
  uint64_t start_ns, end_ns;  // CUPTI clock
  uint32_t correlation_id, cbid, tid;
  int32_t result;  // CUresult
};

class DriverCalls {
 public:
  // `record`: the capture is recording (entries and exits are paired either way).
  static void OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info, bool record);
  static void OnExit(CUpti_CallbackId cbid, const CUpti_CallbackData* info);
  // Writer: moves finished calls out of the threads' rings.
  static void Collect(std::vector<DriverCall>* out);
  static uint64_t dropped();
};

}  // namespace tracesmith::capture
