// Results of one GPU replay run as data: the text report and the JSON
// document of `tracesmith replay FILE --json` (schema: docs/replay-format.md,
// "Results as JSON"). CPU code: the GPU library's entry point
// (gpu/gpu_entry.cc) fills a ReplayRun as launches complete, and tests build
// outcomes by hand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/replay/compare.h"

namespace tracesmith::replay {

// Version of the JSON documents of `tracesmith replay --json` (GPU replay
// and --dry-run); raised when a field changes meaning or goes away, not when
// one is added.
inline constexpr int kReplayJsonVersion = 1;

struct ReplayRun {
  std::string path;
  // ReplayOnGpu's device line: "NAME (sm_XY), driver A.B; ..." and a second
  // line "device memory: ..." (empty when the replay failed before).
  std::string device_line;
  // The options the replay ran with (echoed in the document).
  uint32_t iterations = 1;
  int64_t launch = -1;                        // -1: every launch
  int64_t node = -1;                          // --node K of graph launch `launch`; -1: none
  int64_t range_first = -1, range_last = -1;  // -1: no range replay
  int device = 0;
  bool same_addresses_only = false;
  bool warm = false;  // --warm: warm timing and the idempotence check
  // In replay order; an outcome with `error` set is the last one.
  std::vector<LaunchOutcome> launches;
  // Why the replay stopped (the message printed on stderr); empty when it
  // ran to the end.
  std::string error;
  // The error is a failed CUDA driver or CUPTI call (StatusCode::kGpuError).
  bool gpu_error = false;
};

// The entry point's exit code: kReplayGpuError when the run stopped on a
// failed CUDA or CUPTI call, kReplayError when it has another error, else
// kReplayDiffers when some output differed from the capture or between
// replays, else kReplayIdentical.
int ReplayExitCode(const ReplayRun& run);

// "GPU replay of PATH on DEVICE_LINE\n": the text report's first line(s).
std::string FormatReplayHeader(std::string_view path, std::string_view device_line);

// The text report as `tracesmith replay` prints it without --json: the
// header, then FormatLaunchOutcome of each launch that completed. Empty when
// none did (the error alone is printed, on stderr).
std::string FormatReplayText(const ReplayRun& run);

// One launch (or range) as a JSON object, without a trailing newline.
std::string LaunchOutcomeJson(const LaunchOutcome& outcome);

// The whole document of `tracesmith replay --json`, ending in a newline.
std::string FormatReplayJson(const ReplayRun& run);

}  // namespace tracesmith::replay
