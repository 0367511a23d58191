// The measurement that single-unit replays share (one launch, one graph
// launch, one graph node alone): the end of setup, about 20 ms of warm-up on
// restored inputs, then the cold timed runs, each from restored inputs with
// the L2 flushed, their outputs downloaded and compared with the capture
// (first run) and with the first run (determinism). The replayer says what
// differs: how its inputs come back and what one measured run queues.
// Internal to the replay GPU library.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernel_timer.h"
#include "replay_common.h"

namespace tracesmith::replay::gpu {

struct MeasuredWork {
  const format::ReplayCapture& cap;
  const Relocation& relocation;
  // The output ranges, downloaded after each cold run.
  const std::vector<const format::SnapshotRecord*>& after;
  StreamAndEvents& se;
  KernelTimer& timer;
  L2Flusher& flusher;
  // Puts in place the state each run starts from; `first` once, at the end
  // of setup (count the rewritten pointer words then).
  std::function<Status(bool first)> start_state;
  // Queues one measured run on se.stream().
  std::function<Status()> run;
  // CUPTI's time of the last kernel is the run's (one kernel, not a graph).
  bool kernel_time = true;
  // The first run's outputs are compared with the capture's (a graph node's
  // are not: the capture holds what the whole graph left).
  bool compare_with_capture = true;
  // Collect the bits that varied between cold runs (for --warm).
  bool track_varying = false;
};

// What the cold runs left, per output range.
struct ColdOutputs {
  std::vector<std::vector<uint8_t>> first;    // the first run's bytes
  std::vector<std::vector<uint8_t>> last;     // the last run's, after two or more
  std::vector<std::vector<uint8_t>> varying;  // with track_varying: AddVaryingBits
  // What the memory holds after the last cold run.
  const std::vector<std::vector<uint8_t>>& left(uint32_t runs) const {
    return runs > 1 ? last : first;
  }
};

// One timed run on whatever the memory and the L2 hold now: the stream
// waits on its gate while the start event, the work and the stop event are
// queued, so that the span holds the work, not the launch latency.
Status TimedRun(const MeasuredWork& w, TimedSamples* samples);

// Copies output range k back to the host.
Status DownloadOutput(const MeasuredWork& w, size_t k, std::vector<uint8_t>* host);

// Compares `host` (output range k) with the captured "after" image,
// pointers into moved ranges rewritten, into out->vs_capture.
Status CompareWithCapture(const MeasuredWork& w, size_t k, const std::vector<uint8_t>& host,
                          LaunchOutcome* out);

// From the first start_state to the summaries: sets out->setup_ms (since
// `setup_start`), vs_capture, iterations_differing, vs_first_replay and the
// cold times; reports each run to `progress`.
Status MeasureColdRuns(const MeasuredWork& w, const GpuReplayOptions& o,
                       std::chrono::steady_clock::time_point setup_start, ReplayProgress* progress,
                       LaunchOutcome* out, ColdOutputs* outputs);

}  // namespace tracesmith::replay::gpu
