#include "tracesmith/session/session.h"

#include <cstdio>

#include "recorders.h"
#include "tracesmith/session/finish_process.h"

namespace tracesmith::session {

Session::Session(capture::CaptureOptions options) : options_(std::move(options)) {}

Session::~Session() {
  if (running_) (void)Stop();
}

Status Session::Configure(const capture::CaptureOptions& options) {
  if (running_) return FailedPrecondition("Session::Configure: the capture is running");
  options_ = options;
  return OkStatus();
}

Status Session::Start() {
  if (running_) return FailedPrecondition("Session::Start: already started");
  RETURN_IF_ERROR(capture::StartCapture(options_, &MakeRecorders));
  running_ = true;
  // Memory in use on the devices that already have a context (on this
  // thread; the injection library's start, inside cuInit, has none yet).
  capture::RecordDeviceMemoryUsed();
  return OkStatus();
}

Status Session::Write() {
  if (!running_) return FailedPrecondition("Session::Write: the capture is not running");
  return capture::FlushCapture();
}

Status Session::Stop() {
  if (!running_) return OkStatus();
  running_ = false;
  const std::string path = capture::CaptureOutputPath();
  RETURN_IF_ERROR(capture::StopCapture());
  // Names the native frames (and adds SASS text) as `tracesmith profile`
  // does when its program ends (session/finish_process.h). The capture
  // itself succeeded: a trace left unnamed is said, not returned.
  auto finished = FinishStoppedCapture(path, options_);
  if (!finished.ok() && !options_.quiet)
    std::fprintf(stderr, "tracesmith: %s\n", finished.status().message().c_str());
  return OkStatus();
}

std::string Session::output_path() const { return capture::CaptureOutputPath(); }
capture::CaptureStats Session::stats() const { return capture::CurrentCaptureStats(); }

}  // namespace tracesmith::session
