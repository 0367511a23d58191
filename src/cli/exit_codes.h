// The exit codes shared by all commands, and the one for each StatusCode.
#pragma once

#include "tracesmith/base/status.h"

namespace tracesmith::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // bad input or usage
inline constexpr int kExitIoError = 2;   // reading or writing a file failed
inline constexpr int kExitInternal = 3;  // a bug in tracesmith
// 4 is replay's "an output differed" (replay::kReplayDiffers).
inline constexpr int kExitGpuError = 5;  // a CUDA driver or CUPTI call failed

// The exit codes as --help's last paragraph says them (README says the same).
inline constexpr const char* kExitHelp =
    "Exit status: 0 success, 1 bad input or usage, 2 an I/O error, 3 a bug in tracesmith, 5 a "
    "CUDA driver or CUPTI call failed (the GPU, its driver or the environment).";

// The exit code of a command that failed with `code`: whose fault it is.
constexpr int ExitCodeFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kIoError:
      return kExitIoError;
    case StatusCode::kInternal:
      return kExitInternal;
    case StatusCode::kGpuError:
      return kExitGpuError;
    default:
      return kExitError;
  }
}

}  // namespace tracesmith::cli
