// Launches recorded by `profile --replay-capture` carry their CUPTI
// correlation id: their kernel's time in the program is the kernel row with
// that id in the same file's trace. CPU only.
#pragma once

#include <string>

#include "tracesmith/format/replay_payload.h"

namespace tracesmith::replay {

// Sets LaunchRecord::recorded_ns of every launch that has a correlation id
// and no time yet, from the kernel rows of the trace at `path`. A file
// whose trace cannot be read leaves the times unknown (0).
void FillRecordedTimes(const std::string& path, format::ReplayCapture* capture);

}  // namespace tracesmith::replay
