// The capture engine as what starts and stops it sees it (session/: the
// injection library's entry point, the in-process Session): one engine per
// process, since CUPTI allows one subscriber. The engine itself
// (src/capture/cupti_engine.h) stays private to capture/.
//
// The engine drives recorders (recorder.h) but does not list them: the caller
// of StartCapture names the function that makes them (session/recorders.cc),
// so the recorders of other modules (hardware/, replay_capture/) depend on
// capture/ and capture/ on none of them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/capture/capture_options.h"

namespace tracesmith::capture {

class Recorder;
struct RecorderContext;

// The recorders the options ask for, in the order every hook is called.
using MakeRecordersFn = std::vector<std::unique_ptr<Recorder>> (*)(const RecorderContext&);

struct CaptureStats {
  uint64_t records = 0;          // CUPTI activity records converted
  uint64_t cupti_dropped = 0;    // records CUPTI dropped (cuptiActivityGetNumDroppedRecords)
  uint64_t buffers_refused = 0;  // buffer requests refused at the --buffer-mb cap
  uint64_t module_loads = 0;
  uint64_t file_bytes = 0;
};

// Subscribes to CUPTI, opens the output and starts the writer thread, with the
// recorders `make_recorders` gives. kFailedPrecondition when CUPTI is already
// in use by another client.
Status StartCapture(const CaptureOptions& options, MakeRecordersFn make_recorders);
// Final flush, close. Idempotent; safe to call from atexit.
Status StopCapture();
// Asks the writer thread for a final flush and waits at most `timeout_ms`.
// Async-signal-tolerant (atomics and nanosleep only); for signal handlers.
void StopCaptureFromSignal(int timeout_ms);
// Flushes now and waits until the rows are on disk.
Status FlushCapture();
// After fork() in the child: the parent's capture is not ours to touch.
void AbandonCaptureAfterFork();
// The recorders' readings at the capture's edges (Recorder::OnCaptureEdge;
// --kinds memory: device memory in use on every device with a context now), on
// the thread that starts or stops the capture; creates no context.
void RecordDeviceMemoryUsed();
// The file actually written (may differ from options.output, see CaptureOptions).
std::string CaptureOutputPath();
CaptureStats CurrentCaptureStats();

}  // namespace tracesmith::capture
