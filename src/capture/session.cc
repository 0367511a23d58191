#include "tracesmith/capture/session.h"

#include "cupti_engine.h"

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
  return CuptiEngine::Get().Stop();
}

std::string Session::output_path() const { return CuptiEngine::Get().output_path(); }
CaptureStats Session::stats() const { return CuptiEngine::Get().stats(); }

}  // namespace tracesmith::capture
