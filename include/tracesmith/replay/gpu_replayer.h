// GPU replay: re-runs captured kernel launches (replay payload chunks, see
// payload.h) in a fresh process at the captured virtual addresses, and
// compares their outputs with the capture and between replays.
//
// The implementation links the CUDA driver, so it lives in a shared library
// (libtracesmith-replay-gpu.so, built only with CUDA) that `tracesmith
// replay` loads with dlopen: the tracesmith binary itself runs on machines
// without a GPU driver. This header has no CUDA types.
//
// Per launch: reserve the captured address ranges at their exact addresses
// (rounded out to the VMM granularity) and map fresh memory there, load the
// module image, then per iteration restore every "before" image, launch with
// the captured parameters between two CUDA events, copy every "after" range
// back and compare: replay 1 against the capture, later replays against
// replay 1 (nondeterminism).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tracesmith/base/status.h"
#include "tracesmith/format/replay_payload.h"
#include "tracesmith/replay/compare.h"

namespace tracesmith::replay {

struct GpuReplayOptions {
  uint32_t iterations = 1;
  int64_t launch = -1;  // replay only this launch index; -1: all
  // Range replay of launches range_first..range_last (inclusive) in capture
  // order from one initial state; -1: off.
  int64_t range_first = -1, range_last = -1;
  int device = 0;  // CUDA device ordinal
  // When a captured range cannot be mapped at its address, map it elsewhere
  // and rewrite pointers (relocation.h); false: fail instead.
  bool allow_relocation = true;
};

// Flags of the entry point.
inline constexpr int kReplayFlagSameAddressesOnly = 1;
inline constexpr int kReplayFlagStrict = 2;  // a damaged file is an error, not a warning
// Print one JSON document (replay_json.h) instead of the text report. A new
// bit rather than a new parameter: the entry point's signature is the dlopen
// ABI between `tracesmith` and the library.
inline constexpr int kReplayFlagJson = 4;

// Replays `capture` (validated) and calls `on_launch` after each launch.
// `device_line` receives a description of the GPU used. Stops at the first
// error, which names the launch and the failing CUDA call; when a launch (or
// the range) fails, `on_launch` is called for it with
// LaunchOutcome::error set before the error is returned.
Status ReplayOnGpu(const ReplayCapture& capture, const GpuReplayOptions& options,
                   const std::function<void(const LaunchOutcome&)>& on_launch,
                   std::string* device_line);

// Exit codes of the GPU replay entry point.
inline constexpr int kReplayIdentical = 0;  // every launch identical and deterministic
inline constexpr int kReplayError = 1;      // could not replay (message on stderr)
inline constexpr int kReplayDiffers = 4;    // some output differed or was nondeterministic

// The shared library's entry point, looked up by dlopen/dlsym.
inline constexpr char kReplayGpuLibName[] = "libtracesmith-replay-gpu.so";
inline constexpr char kReplayGpuEntryName[] = "TracesmithReplayGpuMainV3";
using ReplayGpuEntry = int (*)(const char* path, uint32_t iterations, int64_t launch, int device,
                               int flags, int64_t range_first, int64_t range_last);

// Loads the GPU replayer library and returns its entry point (the library
// stays loaded): $TRACESMITH_REPLAY_GPU_LIB, else beside the running binary
// (<prefix>/bin/tracesmith -> <prefix>/lib/libtracesmith-replay-gpu.so, then
// <prefix>/bin/). CPU code (gpu_loader.cc): the caller needs no CUDA; the
// library itself needs the NVIDIA driver's libcuda.so.1. NotFound when no
// candidate exists, FailedPrecondition when one cannot be loaded.
StatusOr<ReplayGpuEntry> LoadGpuReplayer();

}  // namespace tracesmith::replay
