// An in-process capture's last step (Session::Stop, `tracesmith.profile()`):
// once its file is closed, the trace's native frames are named and the SASS
// text of sampled instructions added, as `tracesmith profile` does when its
// program ends. The same library call does it, symbolize::FinishCapture, in
// the `tracesmith` command run as a child process (`tracesmith symbolize FILE
// --capture-end`): capture/ may not depend on symbolize/, libdw (static, so
// that the GPU machine needs no elfutils) cannot be linked into a shared
// library such as libtracesmith-inject.so, and the program's own memory is
// left alone. Bounded: the child gets the time limit and is killed when it
// overruns it by kFinishGraceSeconds (reading and writing the trace).
#pragma once

#include <string>

#include "tracesmith/base/status.h"
#include "tracesmith/capture/capture_options.h"

namespace tracesmith::session {

// Seconds the child may take beyond the time limit (the trace read and written).
inline constexpr double kFinishGraceSeconds = 60;

// The `tracesmith` command: $TRACESMITH_CLI, else bin/tracesmith beside the
// library or program that holds this code (<dir>/../bin, as in a build tree
// and the Python package's _bin/, or <dir> itself), else PATH. "" when none.
std::string FindCli();

// What FinishStoppedCapture did.
struct FinishRun {
  bool ran = false;     // the child was started
  int exit_code = 0;    // its exit status (-1: killed at the time limit)
  std::string cli;      // the command run
  std::string command;  // its command line, for messages
};

// Runs `cli symbolize PATH --capture-end` (--no-names when options.symbolize
// is false, --time-limit from options.symbolize_time_limit_ns, -q when
// options.quiet; its stdout to /dev/null, its stderr the program's unless
// quiet) and waits for it, within the time limit plus kFinishGraceSeconds.
// Nothing is run when there is nothing to do (no file at `path`, or
// options.symbolize false and no cubins beside the trace). `cli` "": FindCli(). An error: no
// command found, it could not be started, or it failed or overran; the trace is then left as
// captured, and the message names the command that finishes it later.
StatusOr<FinishRun> FinishStoppedCapture(const std::string& path,
                                         const capture::CaptureOptions& options,
                                         const std::string& cli = "");

}  // namespace tracesmith::session
