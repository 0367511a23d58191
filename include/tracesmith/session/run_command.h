// Running a command under capture: what `tracesmith profile` does, as a
// library call (the CLI only parses its options and prints the outcome).
//
// RunUnderCapture starts the command as a child process with the injection
// library (libtracesmith-inject.so) named in its environment
// (CUDA_INJECTION64_PATH, and the CaptureOptions as TRACESMITH_* variables),
// so that every process of it that initialises CUDA writes an SBT trace
// (run_outputs.h names the files). The child inherits stdin, stdout and
// stderr. While it runs, SIGTERM and SIGHUP sent to this process are passed on
// to it, and so are SIGINT and SIGQUIT sent by a process (a terminal's Ctrl-C
// reaches the command directly); the command gets SIGTERM if this process dies
// (SIGKILL). The call waits for the command and returns how it ended.
//
// The library prints nothing; only the child prints, when the command cannot
// be executed ("tracesmith: error: cannot run '<cmd>': <why>", exit code 127).
// Signals that arrive after the command ended are this process's own: they
// take effect when RunUnderCapture returns. The forwarding handlers are
// process-wide: one run at a time per process.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/capture/capture_options.h"

namespace tracesmith::session {

inline constexpr const char* kInjectLibName = "libtracesmith-inject.so";

// The injection library: $TRACESMITH_INJECT_LIB (NotFound when it names no
// file), else beside the tracesmith binary in `bin_dir`: <bin_dir>/../lib,
// <bin_dir> or <bin_dir>/../lib64 (an installed <prefix>/bin/tracesmith finds
// <prefix>/lib/libtracesmith-inject.so). The path returned is absolute.
StatusOr<std::string> FindInjectLibrary(const std::string& bin_dir);
// The same, beside the running executable (/proc/self/exe).
StatusOr<std::string> FindInjectLibrary();

struct RunOptions {
  // The command and its arguments; command[0] is looked up in PATH.
  std::vector<std::string> command;
  // What to record. capture.output is the file the first process writes
  // (made absolute, as dump_raw_dir: the command may change directory). An
  // existing output is
  // replaced only with capture.overwrite, and then only when the run writes a
  // new one (PreviousTrace).
  capture::CaptureOptions capture;
  // FindInjectLibrary's answer. Empty: the command runs unprofiled (a build
  // without CUDA/CUPTI), with the environment it would have had anyway.
  std::string inject_library;
  // Variables the command gets unless the user's environment sets them
  // (profiled runs only): torch.compile's provenance and structured log
  // (symbolize/compiled_lines.h).
  std::vector<std::pair<std::string, std::string>> env_defaults;
};

struct RunResult {
  // How the command ended: its exit code, or the signal that killed it
  // (term_signal != 0; exit_code is then 0).
  int exit_code = 0;
  int term_signal = 0;
  // From just before the command started until it was reaped.
  double seconds = 0;
  // capture.output made absolute.
  std::string output;
  // The trace files of this run (FindOutputs): `output` first when this run
  // wrote it, then the other processes' files. Empty without inject_library.
  std::vector<std::string> files;
  // capture.overwrite over an existing output: the run wrote no new one, and
  // the previous trace is kept under its name.
  bool kept_previous = false;
  // Not OK when the previous trace could not be put back: the message says
  // where it is kept. The run itself succeeded.
  Status previous_trace;
};

// Runs `options.command` under capture and waits for it. Errors (no command,
// an output that may not be written, options the injection library would
// refuse, setting the previous trace aside, fork) come before the command
// runs; the command's own failure is in RunResult, never an error here.
StatusOr<RunResult> RunUnderCapture(const RunOptions& options);

}  // namespace tracesmith::session
