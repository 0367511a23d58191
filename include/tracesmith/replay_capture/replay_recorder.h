// --replay-capture's recorder (replay_capture/README.md), null when the
// options do not ask for it; session/recorders.cc lists it.
#pragma once

#include <memory>

#include "tracesmith/capture/recorder.h"

namespace tracesmith::replay_capture {

std::unique_ptr<capture::Recorder> MakeReplayRecorder(const capture::RecorderContext& context);

}  // namespace tracesmith::replay_capture
