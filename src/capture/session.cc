#include "tracesmith/capture/session.h"

#include <cstdio>

#include "cupti_engine.h"
#include "tracesmith/capture/finish_process.h"

namespace tracesmith::capture {

Session::Session(CaptureOptions options) : options_(std::move(options)) {}

Session::~Session() {
  if (running_) (void)Stop();
}

Status Session::Configure(const CaptureOptions& options) {
  if (running_) return FailedPrecondition("Session::Configure: the capture is running");
  options_ = options;
  return OkStatus();
}

Status Session::Start() {
  if (running_) return FailedPrecondition("Session::Start: already started");
  RETURN_IF_ERROR(CuptiEngine::Get().Start(options_));
  running_ = true;
  // Memory in use on the devices that already have a context (on this
  // thread; the injection library's start, inside cuInit, has none yet).
  CuptiEngine::Get().RecordDeviceMemoryUsed();
  return OkStatus();
}

Status Session::Write() {
  if (!running_) return FailedPrecondition("Session::Write: the capture is not running");
  return CuptiEngine::Get().FlushNow();
}

Status Session::Stop() {
  if (!running_) return OkStatus();
  running_ = false;
  const std::string path = CuptiEngine::Get().output_path();
  RETURN_IF_ERROR(CuptiEngine::Get().Stop());
  // Names the native frames (and adds SASS text) as `tracesmith profile`
  // does when its program ends (capture/finish_process.h). The capture
  // itself succeeded: a trace left unnamed is said, not returned.
  auto finished = FinishStoppedCapture(path, options_);
  if (!finished.ok() && !options_.quiet)
    std::fprintf(stderr, "tracesmith: %s\n", finished.status().message().c_str());
  return OkStatus();
}

std::string Session::output_path() const { return CuptiEngine::Get().output_path(); }
CaptureStats Session::stats() const { return CuptiEngine::Get().stats(); }

}  // namespace tracesmith::capture
