// tracesmith::session::Session: capture a CUDA program from inside itself.
//
//   tracesmith::capture::CaptureOptions opts;
//   opts.output = "run.sbt";
//   tracesmith::session::Session session(opts);
//   RETURN_IF_ERROR(session.Start());   // before or after CUDA init
//   ... CUDA work ...
//   RETURN_IF_ERROR(session.Write());   // optional: flush what was captured so far
//   RETURN_IF_ERROR(session.Stop());    // final flush, file closed
//
// One capture per process (CUPTI allows one subscriber): Start() fails with
// kFailedPrecondition when another Session, the injection library or another
// CUPTI client (torch.profiler, Nsight) already holds CUPTI. The
// `tracesmith profile` command uses the same engine through
// libtracesmith-inject.so, with no change to the program.
#pragma once

#include <cstdint>
#include <string>

#include "tracesmith/base/status.h"
#include "tracesmith/capture/capture_options.h"
#include "tracesmith/capture/engine.h"

namespace tracesmith::session {

class Session {
 public:
  explicit Session(capture::CaptureOptions options = {});
  ~Session();  // Stop()s a running capture
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Replaces the options; only before Start().
  Status Configure(const capture::CaptureOptions& options);
  Status Start();
  // Flushes CUPTI buffers and writes everything captured so far as chunks.
  Status Write();
  // Stops recording, writes the rest and closes the file; then, unless
  // options.symbolize is false, names its native frames as `tracesmith
  // profile` does when its program ends, in at most
  // options.symbolize_time_limit_ns, and adds the SASS text of sampled
  // instructions (session/finish_process.h: `tracesmith symbolize
  // --capture-end` run as a child; if that fails, a line on stderr unless
  // quiet, the trace stays as captured and `analyze` says how to name it).
  // Idempotent.
  Status Stop();

  bool running() const { return running_; }
  // The file actually written (may differ from options.output, see CaptureOptions).
  std::string output_path() const;
  capture::CaptureStats stats() const;

 private:
  capture::CaptureOptions options_;
  bool running_ = false;
};

}  // namespace tracesmith::session

namespace tracesmith::capture {
// The in-process capture's name before session/ became a module of its own
// (2026-11-30), kept so that programs written against it still build.
using Session = session::Session;
}  // namespace tracesmith::capture
