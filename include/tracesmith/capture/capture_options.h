// CaptureOptions: what a capture records and how, shared by the CLI
// (`tracesmith profile`), the injection library and the in-process Session.
//
// The CLI passes options to the injection library in the child's environment
// (TRACESMITH_* variables, see kEnv* below), so the same parsing code runs on
// both sides. This file needs no CUDA headers: the CLI builds without CUDA.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/capture/gpu_metric_set.h"
#include "tracesmith/format/job_file_names.h"
#include "tracesmith/format/memory_scope.h"
#include "tracesmith/stacks/stack_mode.h"

namespace tracesmith::capture {

// CaptureOptions::symbolize_time_limit_ns's default, 120 s: libtorch_cuda's
// symbol table takes a few seconds; nvdisasm on a large cubin up to a minute.
inline constexpr uint64_t kDefaultSymbolizeTimeLimitNs = 120'000'000'000ull;

// Activity groups that --kinds turns on and off.
enum ActivityGroup : uint32_t {
  kGroupKernel = 1u << 0,     // CONCURRENT_KERNEL (never the serializing KERNEL kind)
  kGroupMemcpy = 1u << 1,     // MEMCPY + MEMCPY2 (peer to peer)
  kGroupMemset = 1u << 2,     // MEMSET
  kGroupSync = 1u << 3,       // synchronization calls, from driver API callbacks at entry/exit
  kGroupRuntime = 1u << 4,    // RUNTIME API (no-op calls filtered)
  kGroupDriver = 1u << 5,     // DRIVER API (no-op calls filtered)
  kGroupMemory = 1u << 6,     // MEMORY2: allocations and frees
  kGroupNvtx = 1u << 7,       // MARKER + MARKER_DATA (NVTX ranges and markers)
  kGroupOverhead = 1u << 8,   // OVERHEAD (CUPTI's own buffer flushes, instrumentation)
  kGroupModule = 1u << 9,     // module load/unload callbacks (cubin size + hash)
  kGroupExternal = 1u << 10,  // EXTERNAL_CORRELATION
  // DRIVER API records of the launch, copy, memset and graph-launch calls a
  // program makes directly (cuBLASLt, cuDNN, CUTLASS, Triton call
  // cuLaunchKernel(Ex) themselves): every other driver API is filtered out,
  // and CUPTI records only top-level calls, so runtime launches are not doubled.
  kGroupDriverLaunch = 1u << 11,
  // Synchronization rows from CUPTI's SYNCHRONIZATION activity instead of
  // callbacks. CUPTI then intercepts every CUDA call, which costs 0.2-0.4 us
  // per call (docs/benchmarks.md); kept to cross-check the callback path.
  kGroupSyncActivity = 1u << 12,
};
// Everything except the full driver API: runtime API rows already describe
// the calls most programs make, and recording both doubles API records per launch.
inline constexpr uint32_t kDefaultGroups =
    kGroupKernel | kGroupMemcpy | kGroupMemset | kGroupSync | kGroupRuntime | kGroupDriverLaunch |
    kGroupMemory | kGroupNvtx | kGroupOverhead | kGroupModule | kGroupExternal;
inline constexpr uint32_t kAllGroups = kDefaultGroups | kGroupDriver;

// Parses "--kinds": "default", "all", "kernel,memcpy" (exactly these),
// "-runtime,+driver" (changes to the default), or a mix ("default,-nvtx").
StatusOr<uint32_t> ParseKinds(const std::string& text);
// "kernel,memcpy,..." for a bitmask.
std::string KindsToString(uint32_t groups);

enum class CaptureRange : uint8_t {
  kAll = 0,              // from CUDA init to exit
  kCudaProfilerApi = 1,  // between cudaProfilerStart and cudaProfilerStop
  kNvtx = 2,             // inside NVTX ranges named range_name
};

// A parsed --replay-capture filter.
struct ReplayFilter {
  enum class Kind : uint8_t { kOff, kAll, kKernel, kLaunchRange } kind = Kind::kOff;
  std::string regex;             // kKernel
  uint64_t first = 0, last = 0;  // kLaunchRange, inclusive
  bool operator==(const ReplayFilter&) const = default;
  // Whether launch `index` is selected, for every kind but kKernel (whose
  // answer is the kernel name's).
  bool SelectsIndex(uint64_t index) const {
    return kind == Kind::kAll || (kind == Kind::kLaunchRange && index >= first && index <= last);
  }
};
// Parses "" (off), "all", "kernel:<regex>", "launch:<N>", "launch:<A>-<B>".
StatusOr<ReplayFilter> ParseReplayFilter(const std::string& text);
// `--replay-memory`: "params", "reachable" or "all"; InvalidArgument naming
// the option otherwise.
StatusOr<format::MemoryScope> ParseMemoryScope(std::string_view text);
// The filter's spelling, as ParseReplayFilter reads it back ("" when off).
std::string ReplayFilterText(const ReplayFilter& filter);

// Knobs for overhead measurements and diagnostics (docs/capture.md,
// docs/benchmarks.md), not options a user picks: no CLI flag sets them. They
// come only from the profiled process's environment, as is (the CLI neither
// clears nor writes them, so the user's reach the program; OptionsToEnv
// leaves them out), read by OptionsFromEnv through TuningFromEnv.
struct CaptureTuning {
  // TRACESMITH_SUBSCRIBE=0: no CUPTI callback subscriber, activities only
  // (no module loads, capture ranges, stacks, recorders or CUPTI-in-use check).
  bool subscribe = true;
  // TRACESMITH_DEVICE_BUFFER_MB=N (N > 0): CUPTI's per-context device buffer
  // (0: CUPTI's default, 3 MiB in CUPTI 13).
  uint32_t device_buffer_mb = 0;
  // TRACESMITH_TID_TYPE=process: CUPTI's default (pthread-derived) thread
  // ids instead of the OS's (gettid), which match /proc and stacks.
  bool system_thread_ids = true;
  // TRACESMITH_MEMINFO_AT_CONTEXT=0: no cuMemGetInfo reading inside the
  // context-created callback (--kinds memory).
  bool meminfo_at_context = true;
  // TRACESMITH_API_FILTER=0: API rows of the noisy no-op calls too.
  bool api_filter = true;
  // TRACESMITH_STACK_REWALK=1: each timed stack walked twice, the second
  // walk timed as capture.cost.stack.rewalk.
  bool stack_rewalk = false;
  // TRACESMITH_STACK_COPYPROBE=1: a copy of the stack span each timed walk
  // reads, timed as capture.cost.stack.copy.
  bool stack_copy_probe = false;
  // TRACESMITH_PC_SAMPLING_HW_BUFFER_MB=N (N > 0): CUPTI's hardware buffer of
  // PC samples (0: the recorder's, 64 MiB at the default period, more at shorter
  // ones, up to CUPTI's 512 MiB); a small one overflows, which
  // the capture counts (pc_sampling.hardware_buffer_full, dropped_samples).
  uint32_t pc_sampling_hw_buffer_mb = 0;
  // TRACESMITH_PC_SAMPLING_SLEEP_MS=N (N > 0): how often CUPTI's worker
  // decodes the hardware buffer (0: the recorder's 1 ms; the cost sweep's).
  uint32_t pc_sampling_sleep_ms = 0;
  // TRACESMITH_PC_SAMPLING_DRAIN_MS=N (N > 0): how often the writer takes the
  // decoded samples (cuptiPCSamplingGetData), one row window each (0: 20 ms);
  // TRACESMITH_PC_SAMPLING_DRAIN_PCS=N (N > 0): PC records per GetData call
  // (0: 4096), the writer yielding between calls. Each GetData held the
  // program's launches up to 2 ms on the H200 (docs/pc-sampling.md "Cost"):
  // the sweep's knobs.
  uint32_t pc_sampling_drain_ms = 0;
  uint32_t pc_sampling_drain_pcs = 0;
  // TRACESMITH_GPU_METRICS_HW_BUFFER_MB=N (N > 0): the GPU's buffer of PM
  // samples per device (0: the recorder's 64 MiB); a small one overflows,
  // which the capture counts (gpu_metrics.dropped_overflows).
  uint32_t gpu_metrics_hw_buffer_mb = 0;
  // TRACESMITH_GPU_METRICS_IMAGE_SAMPLES=N (N > 0): samples the counter data
  // image holds between two decodes (0: the recorder's choice).
  uint32_t gpu_metrics_image_samples = 0;
  // TRACESMITH_GPU_METRICS_DECODE_MS=N (N > 0): how often the decode thread
  // empties the GPU's buffer (0: the recorder's 10 ms).
  uint32_t gpu_metrics_decode_ms = 0;
  // TRACESMITH_ACTIVITY_BUFFER_KB=N (N > 0): the size of each CUPTI activity
  // buffer (0: 8 MiB); for the stall sweep (issue #41 item 2).
  uint32_t activity_buffer_kb = 0;
  // TRACESMITH_BUFFER_PREFAULT=0: activity buffers allocated when CUPTI asks,
  // untouched, instead of kept ready and touched by the writer (comparisons).
  bool buffer_prefault = true;
  // TRACESMITH_SLOW_CALL_PROBE=1: each callback call of 100 us or more classed
  // by what happened to its thread (capture_cost.h: SlowCallProbe).
  bool slow_call_probe = false;
  // TRACESMITH_BATCH_THREADS=0: TraceSmith's writer and decoder threads keep
  // the default scheduling policy instead of SCHED_BATCH (background_thread.h).
  bool batch_threads = true;
  // TRACESMITH_DEFER_STACKS=0: a new stack interned inside the CUDA call that
  // first saw it, as before deferral (the sweep's knob; docs/capture.md).
  bool defer_stack_interning = true;
  bool operator==(const CaptureTuning&) const = default;
};

struct CaptureOptions {
  // Output file. In a process tree the first process to create it writes it;
  // the others write <stem>.pid<PID>.sbt, or <stem>.rank<RANK>.sbt when the
  // environment has RANK (torchrun and friends).
  std::string output = "tracesmith.sbt";
  uint32_t groups = kDefaultGroups;
  // Host memory for CUPTI activity buffers; when all are in use, CUPTI drops
  // records and counts them. 256 MiB holds ~1 s of a 1M-launch/s program.
  uint32_t buffer_mb = 256;
  // Period of cuptiActivityFlushAll + SBT chunk flush: the most a SIGKILL loses.
  uint32_t flush_ms = 500;
  uint64_t duration_ns = 0;  // 0: until exit
  uint64_t delay_ns = 0;     // start recording this long after CUDA init
  CaptureRange range = CaptureRange::kAll;
  std::string range_name;  // NVTX range name for CaptureRange::kNvtx
  bool quiet = false;
  bool overwrite = false;
  // Debug: write raw CUPTI activity records here (fixtures for conversion tests).
  std::string dump_raw_dir;
  // Host call stacks at every launch/copy/memset/graph launch (--stacks):
  // none, native, python, mixed (native frames up to the innermost Python
  // frame, then the Python frames) or full (every native frame, Python frames
  // in place of the eval loop's); nullopt is "auto": mixed when a Python
  // interpreter runs the program, else native, decided when the capture
  // starts (in the target process, where the interpreter is).
  std::optional<stacks::StackMode> stacks;
  // Frames kept per stack (1-256; the outermost are dropped beyond).
  uint32_t stack_depth = 128;
  // Replay capture (--replay-capture): which kernel launches to record with
  // their module, parameters and memory images, for `tracesmith replay`:
  // off, all, kernel:<regex> (mangled or demangled name), launch:<N> or
  // launch:<A>-<B> (0-based launch indices, inclusive). With
  // --capture-range, only launches inside the range count.
  ReplayFilter replay_capture;
  uint32_t replay_max_mb = 4096;      // memory images in all; later launches are skipped
  uint32_t replay_max_launches = 64;  // launches recorded at most
  // Which memory a recorded launch snapshots: the allocations its
  // parameters point into (kParams), and those reached through pointers
  // stored in them, transitively up to replay_reach_depth hops (kReachable),
  // or every live allocation the capture has seen (kAll).
  format::MemoryScope replay_memory = format::MemoryScope::kReachable;
  uint32_t replay_reach_depth = 8;
  // And these device ranges, "ADDR:SIZE[,ADDR:SIZE...]" (hex 0x... or
  // decimal; an address inside an allocation takes the whole allocation).
  std::string replay_ranges;
  // GPU instruction sampling (--pc-sampling[=N]): CUPTI PC sampling in
  // continuous mode on every context, one warp sample per SM every 2^N
  // cycles; 0: off. The default period is kDefaultPcSamplingPeriod.
  uint32_t pc_sampling = 0;
  // --kernel-timeout DURATION: a kernel still running this long is reported
  // (which kernel, the launch and its host stack, where its warps are
  // sampled: capture/kernel_watchdog.h); turns GPU instruction sampling on at
  // the default period when it is off. 0: off.
  uint64_t kernel_timeout_ns = 0;
  // --on-kernel-timeout exit: then the trace is written and the program ended
  // with exit status kKernelTimeoutExitStatus; report (false): it goes on.
  bool kernel_timeout_exit = false;
  // Exact instruction counts (--sass-counts): CUPTI's SASS metrics on every
  // context, each function's executions per instruction (by warps and by
  // threads) summed over the run (docs/pc-sampling.md). Not with PC sampling.
  bool sass_counts = false;
  // GPU hardware metrics over time (--gpu-metrics[=SET]): CUPTI PM sampling
  // on every device, one sample of each metric every gpu_metrics_interval_ns
  // (capture/gpu_metric_set.h says which metrics). kOff: off; kList is the
  // CLI's and never reaches a capture.
  GpuMetricsRequest gpu_metrics;
  uint64_t gpu_metrics_interval_ns = kDefaultGpuMetricsIntervalNs;
  // An in-process capture's end (Session::Stop, `tracesmith.profile()`): once
  // the file is closed, name its native frames from the modules' symbol
  // tables, as `tracesmith profile` does when its program ends (the same
  // library call, symbolize::FinishCapture, in `tracesmith symbolize
  // --capture-end` run as a child: session/finish_process.h), in at most
  // symbolize_time_limit_ns (0: no limit); false leaves them unnamed for a
  // later `tracesmith symbolize`. The SASS text of sampled instructions is
  // added either way. The injection library ignores both: `tracesmith
  // profile` does this itself after the program (--no-symbolize).
  bool symbolize = true;
  uint64_t symbolize_time_limit_ns = kDefaultSymbolizeTimeLimitNs;
  CaptureTuning tuning;
};

// --pc-sampling's default period, 2^15 cycles: on an H200 (132 SMs) about
// 8 M samples/s, which CUPTI drains while kernels run with no cost measured
// on the kernels; at 2^13 and below its hardware buffer overflows and the
// samples are lost (docs/pc-sampling.md, 2026-11-28).
inline constexpr uint32_t kDefaultPcSamplingPeriod = 15;
inline constexpr uint32_t kMinPcSamplingPeriod = 5, kMaxPcSamplingPeriod = 31;
// Parses --pc-sampling's value: "" or "auto" (the default period), or N in
// [5, 31] (2^N cycles), or "2^N"; InvalidArgument naming the range otherwise.
StatusOr<uint32_t> ParsePcSamplingPeriod(std::string_view text);

// The exit status of a program ended by --on-kernel-timeout exit (timeout(1)'s).
inline constexpr int kKernelTimeoutExitStatus = 124;

struct DeviceRange {
  uint64_t address = 0, size = 0;
};
StatusOr<std::vector<DeviceRange>> ParseDeviceRanges(const std::string& text);

// Environment variables that carry CaptureOptions to the injection library.
inline constexpr const char* kEnvOutput = "TRACESMITH_OUTPUT";
inline constexpr const char* kEnvKinds = "TRACESMITH_KINDS";
inline constexpr const char* kEnvBufferMb = "TRACESMITH_BUFFER_MB";
inline constexpr const char* kEnvFlushMs = "TRACESMITH_FLUSH_MS";
inline constexpr const char* kEnvDuration = "TRACESMITH_DURATION";
inline constexpr const char* kEnvDelay = "TRACESMITH_DELAY";
inline constexpr const char* kEnvCaptureRange = "TRACESMITH_CAPTURE_RANGE";
inline constexpr const char* kEnvQuiet = "TRACESMITH_QUIET";
inline constexpr const char* kEnvForce = "TRACESMITH_FORCE";
inline constexpr const char* kEnvDumpRaw = "TRACESMITH_DUMP_RAW";
inline constexpr const char* kEnvStacks = "TRACESMITH_STACKS";
inline constexpr const char* kEnvStackDepth = "TRACESMITH_STACK_DEPTH";
inline constexpr const char* kEnvReplayCapture = "TRACESMITH_REPLAY_CAPTURE";
inline constexpr const char* kEnvReplayMaxMb = "TRACESMITH_REPLAY_MAX_MB";
inline constexpr const char* kEnvReplayMaxLaunches = "TRACESMITH_REPLAY_MAX_LAUNCHES";
inline constexpr const char* kEnvReplayMemory = "TRACESMITH_REPLAY_MEMORY";
inline constexpr const char* kEnvReplayRanges = "TRACESMITH_REPLAY_RANGES";
inline constexpr const char* kEnvReplayReachDepth = "TRACESMITH_REPLAY_REACH_DEPTH";
inline constexpr const char* kEnvPcSampling = "TRACESMITH_PC_SAMPLING";
inline constexpr const char* kEnvKernelTimeout = "TRACESMITH_KERNEL_TIMEOUT";
inline constexpr const char* kEnvOnKernelTimeout = "TRACESMITH_ON_KERNEL_TIMEOUT";
inline constexpr const char* kEnvSassCounts = "TRACESMITH_SASS_COUNTS";
inline constexpr const char* kEnvGpuMetrics = "TRACESMITH_GPU_METRICS";
inline constexpr const char* kEnvGpuMetricsInterval = "TRACESMITH_GPU_METRICS_INTERVAL";
inline constexpr const char* kEnvSymbolize = "TRACESMITH_SYMBOLIZE";
inline constexpr const char* kEnvSymbolizeTimeLimit = "TRACESMITH_SYMBOLIZE_TIME_LIMIT";
// CaptureTuning's (read from the environment only).
inline constexpr const char* kEnvSubscribe = "TRACESMITH_SUBSCRIBE";
inline constexpr const char* kEnvDeviceBufferMb = "TRACESMITH_DEVICE_BUFFER_MB";
inline constexpr const char* kEnvTidType = "TRACESMITH_TID_TYPE";
inline constexpr const char* kEnvMeminfoAtContext = "TRACESMITH_MEMINFO_AT_CONTEXT";
inline constexpr const char* kEnvApiFilter = "TRACESMITH_API_FILTER";
inline constexpr const char* kEnvStackRewalk = "TRACESMITH_STACK_REWALK";
inline constexpr const char* kEnvStackCopyProbe = "TRACESMITH_STACK_COPYPROBE";
inline constexpr const char* kEnvPcSamplingHwBufferMb = "TRACESMITH_PC_SAMPLING_HW_BUFFER_MB";
inline constexpr const char* kEnvPcSamplingSleepMs = "TRACESMITH_PC_SAMPLING_SLEEP_MS";
inline constexpr const char* kEnvPcSamplingDrainMs = "TRACESMITH_PC_SAMPLING_DRAIN_MS";
inline constexpr const char* kEnvPcSamplingDrainPcs = "TRACESMITH_PC_SAMPLING_DRAIN_PCS";
inline constexpr const char* kEnvGpuMetricsHwBufferMb = "TRACESMITH_GPU_METRICS_HW_BUFFER_MB";
inline constexpr const char* kEnvGpuMetricsImageSamples = "TRACESMITH_GPU_METRICS_IMAGE_SAMPLES";
inline constexpr const char* kEnvGpuMetricsDecodeMs = "TRACESMITH_GPU_METRICS_DECODE_MS";
inline constexpr const char* kEnvActivityBufferKb = "TRACESMITH_ACTIVITY_BUFFER_KB";
inline constexpr const char* kEnvBufferPrefault = "TRACESMITH_BUFFER_PREFAULT";
inline constexpr const char* kEnvSlowCallProbe = "TRACESMITH_SLOW_CALL_PROBE";
inline constexpr const char* kEnvBatchThreads = "TRACESMITH_BATCH_THREADS";
inline constexpr const char* kEnvDeferStacks = "TRACESMITH_DEFER_STACKS";
// Set by tests only: installs a stack hook that returns 1, 2, 3... so GPU
// tests can check the correlation-id join of API rows and GPU rows.
inline constexpr const char* kEnvTestStackHook = "TRACESMITH_TEST_STACK_HOOK";

// Parses "--stacks": auto (nullopt), none, native, python, mixed or full.
StatusOr<std::optional<stacks::StackMode>> ParseStacksOption(const std::string& text);
// Its spelling: "auto" for nullopt, else StackModeName.
const char* StacksOptionText(std::optional<stacks::StackMode> stacks);

// Parses "--capture-range": "", "all", "cudaProfilerApi" or "nvtx:<name>".
Status ParseCaptureRange(const std::string& text, CaptureOptions* options);

// Builds options from the TRACESMITH_* variables of `env` (missing = default),
// tuning included.
StatusOr<CaptureOptions> OptionsFromEnv(const std::map<std::string, std::string>& env);
StatusOr<CaptureOptions> OptionsFromProcessEnv();
// The tuning knobs of `env`; a value other than the ones above is the
// default (as the engine always read them: they never fail a capture).
CaptureTuning TuningFromEnv(const std::map<std::string, std::string>& env);
// ... of this process's environment (an in-process capture started with
// options from elsewhere: session_c_api.cc).
CaptureTuning TuningFromProcessEnv();
// The TRACESMITH_* variables that reproduce `options`.
std::map<std::string, std::string> OptionsToEnv(const CaptureOptions& options);
// Every variable that carries an option (kEnv* above, not the test hook):
// the CLI clears them all before setting OptionsToEnv, so a stale one in the
// user's environment (say TRACESMITH_DURATION) cannot change the capture.
const std::vector<std::string>& OptionEnvNames();

// The file this process writes for `base`: base itself, or the pid/rank name
// (defined in format/job_file_names.h, beside its inverse, for the readers of a run).
using format::PerProcessOutputPath;

}  // namespace tracesmith::capture
