// Schedule emulation ("dry-run"): re-schedules a recorded trace's dependency
// graph on the CPU with the recorded durations, optionally changed by what-if
// options, and predicts the resulting schedule and total time. Nothing runs
// on a GPU: this is a timing model, never called replay.
//
// The model. Every GPU op, API call and synchronization record is a node
// with a start and an end. Edges come from analysis::DependencyRules:
//   start edges  stream order, launch (from the call's *start*), event wait,
//                cross-device, thread order; a sync record starts with the
//                API call of the same correlation id
//   end edges    a blocking call returns after the op / sync record it waited
//                for; a sync record ends after the op it waited for
// Each edge carries a delay. The *binding* edge of a node (the predecessor
// that finished last but not after the node started, in the recording) keeps
// the recorded gap: launch latency, host time between calls, return latency.
// Other edges are pure ordering (delay 0), except launch edges, which keep
// at least the trace's median unqueued launch latency. A node waiting on a
// binding end edge has no duration of its own; otherwise it keeps its
// recorded duration (kernels scaled by --scale-kernel).
//
// Inferred edges that contradict the recorded times (a predecessor recorded
// to end after the node started, or ended) are ignored and counted in
// EmulationResult::contradicting_edges. Consequence: with no what-if options
// the recorded schedule is reproduced; what-if options move every node
// whose binding chain passes through a change. The graph of node starts and
// ends is never stored: it is evaluated in recorded-time order with each
// node's edges recomputed from DependencyRules, and a predicted time is kept
// only until its last reader has read it (about 2 bytes per node besides the
// CompactTrace). Equal times and --streams make some nodes wait for their
// predecessors; the result is that of a topological evaluation of the whole
// graph, cycles (only --streams makes them) broken as Kahn's algorithm does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::replay {

struct KernelScale {
  std::string pattern;  // ECMAScript regex, searched in the kernel name
  double factor = 1.0;
};

struct EmulationOptions {
  // Kernel durations are multiplied by the factor of the first pattern that
  // matches the kernel's name.
  std::vector<KernelScale> scale_kernels;
  // Drop stream and device (context) synchronize waits: the host no longer
  // blocks on the GPU there. Event synchronize and stream waits stay.
  bool remove_sync = false;
  // Map each process/device's streams round-robin onto this many streams
  // (0: keep the recorded streams). Ops of one recorded stream stay in order.
  uint32_t streams = 0;
  // Fill EmulationResult::op_start / op_end (16 bytes per op: 160 MB at 10 M
  // kernels; the summary and `schedule` do not need them).
  bool op_times = true;
  // Keep the first this many ops in predicted start order in
  // EmulationResult::schedule.
  size_t schedule_rows = 0;
};

// Parses "REGEX=FACTOR" (the last '=' splits; FACTOR > 0).
StatusOr<KernelScale> ParseKernelScale(const std::string& spec);

struct EmulatedStream {
  uint32_t pid = 0, device = 0;
  uint32_t stream = 0;  // recorded stream id, or the virtual stream index with --streams
  uint64_t ops = 0;
  uint64_t busy_ns = 0;  // sum of op durations (predicted)
  uint64_t recorded_busy_ns = 0;
  int64_t first_start = 0, last_end = 0;  // predicted, relative to the predicted begin
};

struct EmulationResult {
  uint64_t recorded_ns = 0;     // first recorded start to last recorded end
  uint64_t predicted_ns = 0;    // same, for the predicted schedule
  int64_t predicted_begin = 0;  // absolute ns of the first predicted start
  // Predicted [start, end) of every op (absolute ns), in CompactTrace::ops()
  // order; empty unless EmulationOptions::op_times.
  std::vector<int64_t> op_start, op_end;
  // The first EmulationOptions::schedule_rows ops by predicted start (ties:
  // the lower op index first).
  struct ScheduledOp {
    uint32_t op = 0;
    int64_t start = 0, end = 0;  // absolute ns
  };
  std::vector<ScheduledOp> schedule;
  std::vector<EmulatedStream> streams;
  uint64_t kernels_scaled = 0;
  uint64_t syncs_removed = 0;
  uint64_t launch_floor_ns = 0;      // median unqueued launch latency
  uint64_t contradicting_edges = 0;  // predecessor recorded to end after the node started
  // Edges broken to resolve a dependency cycle (only --streams can make one).
  uint64_t out_of_order_refs = 0;
  double ErrorPercent() const {
    return recorded_ns ? 100.0 * (double(predicted_ns) - double(recorded_ns)) / double(recorded_ns)
                       : 0.0;
  }
};

StatusOr<EmulationResult> EmulateSchedule(const analysis::CompactTrace& trace,
                                          const EmulationOptions& options);

// Human-readable summary: per stream, totals, what-if effects. `schedule_rows`
// > 0 also lists that many ops in predicted start order (from
// result.schedule when it was kept, else from op_start / op_end).
std::string FormatEmulation(const analysis::CompactTrace& trace, const EmulationOptions& options,
                            const EmulationResult& result, size_t schedule_rows = 0);

// The same as one JSON document (`tracesmith replay --dry-run --json`;
// schema in docs/replay-format.md, "Results as JSON"), ending in a newline.
// Times are integer nanoseconds; schedule and stream times are relative to
// the predicted begin. `path` is echoed as "file".
std::string FormatEmulationJson(std::string_view path, const analysis::CompactTrace& trace,
                                const EmulationOptions& options, const EmulationResult& result,
                                size_t schedule_rows = 0);

}  // namespace tracesmith::replay
