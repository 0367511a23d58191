// A fake CUPTI PC sampling API and CUDA driver, without a GPU: the symbols
// pc_sampling_recorder.cc (and cubin_lines.cc, kernel_timeout_watch.cc,
// live_contexts.cc) call, defined in fake_cupti_pcsampling.cc with the C
// linkage of the real headers, so that a test links the recorder's sources
// against this instead of libcupti and libcuda.
//
// Per context it keeps what CUPTI would: whether sampling is enabled, the
// sampling data buffer and stall index array given at configuration. Like
// real CUPTI might (its documentation never says when it lets go of them), it
// writes into the last configured buffer and reads the stall indices at every
// Enable and Disable of the context, also after the capture that gave them
// has ended: a freed buffer is a heap-use-after-free under ASan (the file is
// instrumented in the asan preset, tests/capture/CMakeLists.txt).
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <cstdint>

namespace tracesmith::hardware::fake_cupti {

// The stall reasons every context has (CUPTI's names, at these indices):
// long_scoreboard and selected are counted (model::IsCountedStall), the
// "_not_issued" sub-count and the sample count are not.
inline constexpr int kNumStallReasons = 4;

// Each GetData returns kPcsPerGetData records, each with kCountedSamplesPerPc
// samples in the counted reasons (two rows: long_scoreboard, selected);
// Disable flushes one record more into the configuration buffer.
inline constexpr int kPcsPerGetData = 2;
inline constexpr int kRowsPerPc = 2;
inline constexpr uint64_t kCountedSamplesPerPc = 4;
inline constexpr uint64_t kTotalSamplesPerPc = 12;  // every reason's (CUPTI's totalSamples)
inline constexpr const char* kFunction = "fake_kernel";
inline constexpr uint64_t kCubinCrc = 0x1234;

struct ContextState {
  bool enabled = false;
  int enables = 0, disables = 0, get_data_calls = 0;
  int writes_into_old_buffer = 0;  // Enables that wrote into a previous configuration's buffer
  const CUpti_PCSamplingData* config = nullptr;  // the configured sampling data buffer
  const uint32_t* stall_indices = nullptr;       // ... and stall reason indices
};

// What the fake holds for `ctx` (a copy).
ContextState State(CUcontext ctx);
// The next cuptiPCSamplingDisable of `ctx` returns `error`; sampling stays on.
void FailNextDisable(CUcontext ctx, CUptiResult error);
// The next cuptiPCSamplingEnable of `ctx` returns `error` (counters closed, a
// profiler holding them); sampling stays off.
void FailNextEnable(CUcontext ctx, CUptiResult error);
// The next cuptiPCSamplingGetData of `ctx` sets hardwareBufferFull and returns
// CUPTI_ERROR_OUT_OF_MEMORY (`as_error`) or success with its records.
void HardwareBufferFullAtNextGetData(CUcontext ctx, bool as_error);
// The CUDA context is gone, and CUPTI's state for it (its buffers forgotten).
void DestroyContext(CUcontext ctx);
// cuptiGetTimestamp's clock moves by `ns` (it also ticks 1 us per call).
void AdvanceClock(uint64_t ns);
// cuCtxGetCurrent's answer (ForEachLiveContext: an in-process capture's start).
void SetCurrentContext(CUcontext ctx);

}  // namespace tracesmith::hardware::fake_cupti
