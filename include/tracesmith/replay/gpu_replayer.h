// GPU replay: re-runs captured kernel launches (replay payload chunks, see
// tracesmith/format/replay_payload.h) in a fresh process at the captured virtual addresses, and
// compares their outputs with the capture and between replays.
//
// The implementation links the CUDA driver, so it lives in a shared library
// (libtracesmith-replay-gpu.so, built only with CUDA) that `tracesmith
// replay` loads with dlopen: the tracesmith binary itself runs on machines
// without a GPU driver. This header has no CUDA types.
//
// Per launch: reserve the captured address ranges at their exact addresses
// (rounded out to the VMM granularity) and map fresh memory there, load the
// module image, then per iteration restore every "before" image, flush the
// L2, launch with the captured parameters between two CUDA events, copy every
// "after" range back and compare: replay 1 against the capture, later
// replays against replay 1 (nondeterminism). These are the cold times. With
// `warm`, the kernel then runs again on the memory it left: once to check
// idempotence, once untimed, then `iterations` timed warm runs, with nothing
// restored or flushed in between (docs/replay-format.md, "Timing").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/format/replay_payload.h"
#include "tracesmith/replay/compare.h"

namespace tracesmith::replay {

// Where a replay is, for a progress line: GpuReplayOptions::progress, and
// the entry point's `on_progress` hook. Plain data: it crosses the dlopen ABI.
struct ReplayProgress {
  uint64_t launches_done = 0;   // selected launches finished (a range replay counts as one)
  uint64_t launches_total = 0;  // selected launches
  uint64_t index = 0;           // the launch being replayed (a range: its first)
  const char* kernel = "";      // its kernel's name (a range: "range A..B"); valid during the call
  uint32_t replays_done = 0;    // its timed runs finished: the cold replays, then the warm runs
  uint32_t replays_total = 0;
  bool range = false;  // a range replay: `kernel` names the range
};

struct GpuReplayOptions {
  uint32_t iterations = 1;
  int64_t launch = -1;  // replay only this launch index; -1: all
  // With `launch` a graph launch: replay only its node `node` (its inputs
  // rebuilt by running the nodes it depends on); -1: the whole graph.
  int64_t node = -1;
  // Range replay of launches range_first..range_last (inclusive) in capture
  // order from one initial state; -1: off.
  int64_t range_first = -1, range_last = -1;
  int device = 0;  // CUDA device ordinal
  // When a captured range cannot be mapped at its address, map it elsewhere
  // and rewrite pointers (relocation.h); false: fail instead.
  bool allow_relocation = true;
  // After the cold replays of a launch, time `iterations` warm runs and
  // check idempotence (LaunchOutcome::warm). Single launches only: range
  // replay ignores it (ValidateReplayRequest refuses the pair).
  bool warm = false;
  // --metrics: after its other runs, each single launch once more under
  // CUPTI's range profiler with these metric names (LaunchOutcome::profile);
  // empty: off.
  std::vector<std::string> metrics;
  // Called as each launch starts and after each of its timed runs; may be
  // empty. On the replaying thread.
  std::function<void(const ReplayProgress&)> progress;
};

// Flags of the entry point.
inline constexpr int kReplayFlagSameAddressesOnly = 1;
inline constexpr int kReplayFlagStrict = 2;  // a damaged file is an error, not a warning
// Print one JSON document (replay_json.h) instead of the text report.
inline constexpr int kReplayFlagJson = 4;
// --warm: GpuReplayOptions::warm.
inline constexpr int kReplayFlagWarm = 8;

// Replays `capture` (validated) and calls `on_launch` after each launch.
// `device_line` receives a description of the GPU used. Stops at the first
// error, which names the launch and the failing CUDA call; when a launch (or
// the range) fails, `on_launch` is called for it with
// LaunchOutcome::error set before the error is returned.
Status ReplayOnGpu(const format::ReplayCapture& capture, const GpuReplayOptions& options,
                   const std::function<void(const LaunchOutcome&)>& on_launch,
                   std::string* device_line);

// Exit codes of the GPU replay entry point.
inline constexpr int kReplayIdentical = 0;  // every launch identical and deterministic
inline constexpr int kReplayError = 1;      // could not replay (message on stderr)
inline constexpr int kReplayDiffers = 4;    // some output differed or was nondeterministic
// A CUDA driver or CUPTI call failed (StatusCode::kGpuError): the GPU, its
// driver or the environment, not the capture; as every command's exit code
// for that error (cli/command.h kExitGpuError).
inline constexpr int kReplayGpuError = 5;

// The shared library's entry point, looked up by dlopen/dlsym. Its argument
// is the ABI between `tracesmith` and the library: one struct whose first
// field is its size as the caller compiled it, so that later versions append
// fields and read them only when `struct_size` covers them (a caller older
// than a field leaves it at its default). The library calls the hooks on the
// replaying thread: `on_progress` as each launch starts and after each timed
// run, `before_output` before it writes to stdout or stderr (so the caller
// can erase a progress line there). Both may be null.
struct ReplayGpuRequest {
  uint32_t struct_size = sizeof(ReplayGpuRequest);
  const char* path = nullptr;
  uint32_t iterations = 1;
  int64_t launch = -1;  // -1: every launch
  int device = 0;
  int flags = 0;                              // kReplayFlag*
  int64_t range_first = -1, range_last = -1;  // -1: no range replay
  void* hook_context = nullptr;
  void (*on_progress)(void* context, const ReplayProgress* progress) = nullptr;
  void (*before_output)(void* context) = nullptr;
  // V5: with `launch` a graph launch, replay its node `node` alone (-1: the
  // whole graph).
  int64_t node = -1;
  // --metrics: the comma-separated names ("" the default set); nullptr: off.
  const char* metrics = nullptr;
};
inline constexpr char kReplayGpuLibName[] = "libtracesmith-replay-gpu.so";
// The library is built with the CLI (the target `tracesmith` depends on
// `tracesmith-replay-gpu`) and ships beside it, so the CLI calls only the
// entry point of its own version; a library without it is from another build.
inline constexpr char kReplayGpuEntryName[] = "TracesmithReplayGpuMainV5";
using ReplayGpuEntry = int (*)(const ReplayGpuRequest* request);

// A loaded GPU replayer library.
struct GpuReplayer {
  std::string path;
  ReplayGpuEntry entry = nullptr;
};

// Loads the GPU replayer library (it stays loaded): $TRACESMITH_REPLAY_GPU_LIB,
// else beside the running binary (<prefix>/bin/tracesmith ->
// <prefix>/lib/libtracesmith-replay-gpu.so, then <prefix>/bin/). CPU code
// (gpu_loader.cc): the caller needs no CUDA; the library itself needs the
// NVIDIA driver's libcuda.so.1. NotFound when no candidate exists,
// FailedPrecondition when one cannot be loaded or has no kReplayGpuEntryName.
StatusOr<GpuReplayer> LoadGpuReplayer();

// The option combinations a replay refuses (InvalidArgument): --warm with a
// range replay, a range with a launch, a node without a launch or with
// --warm. The library checks them too.
Status ValidateReplayRequest(const ReplayGpuRequest& request);

// What `tracesmith replay` does: validates the request, loads the library
// and runs the replay through its entry point; returns the entry point's
// exit code (kReplay*).
StatusOr<int> RunGpuReplay(const ReplayGpuRequest& request);

// The progress line's text for `p`: "launch 17 (3 of 240) KERNEL" (the
// kernel's name cut to 40 characters) or "range A..B" (`kernel`), and the fraction of
// the whole replay done, in [0, 1] (launches finished plus the share of the
// current one's runs).
std::string ReplayProgressText(const ReplayProgress& p);
double ReplayProgressFraction(const ReplayProgress& p);

}  // namespace tracesmith::replay
