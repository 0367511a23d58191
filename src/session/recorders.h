// Every recorder of a capture (recorders.cc), for capture's StartCapture.
#pragma once

#include <memory>
#include <vector>

#include "tracesmith/capture/recorder.h"

namespace tracesmith::session {

// The recorders the options ask for, in the order of recorders.cc's list.
std::vector<std::unique_ptr<capture::Recorder>> MakeRecorders(
    const capture::RecorderContext& context);

}  // namespace tracesmith::session
