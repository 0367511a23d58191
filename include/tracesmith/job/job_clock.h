// JobClock: one time base for the processes of a job, with an error bound
// per process and the method that gave it.
//
// The job time base is CLOCK_REALTIME of the reference host (the host of the
// lowest rank), read through that host's CLOCK_MONOTONIC. Each process maps
// its capture clock to CLOCK_MONOTONIC of its host through its ClockAnchor
// rows, linearly between its first and last anchors (the drift between the
// capture clock and the host clock is corrected; with one anchor only an
// offset, and the assumed drift bound applies over the process's span).
// Then, per host, monotonic -> job base by an offset x_host:
//   - same host as the reference: x = realtime - monotonic of the reference
//     host's anchors (one kernel clock: processes on one host compare
//     exactly up to their anchors' read windows);                    "same host: monotonic anchors"
//   - another host: its own realtime - monotonic, i.e. its CLOCK_REALTIME,
//     which differs from the reference host's by at most the assumed NTP
//     bound (an option: nothing in a trace measures it);              "realtime anchors"
//   - then refined by the collectives: for every matched collective that
//     needs every rank (all-reduce, all-gather, reduce-scatter,
//     all-to-all), no rank's kernel can end before the last rank's kernel
//     started. Each such pair of ranks on hosts A and B gives
//     x_B - x_A <= end_a - start_b (monotonic times, widened by both
//     anchor bounds). With the NTP prior these difference constraints are
//     solved exactly for the tightest interval of every x (shortest paths
//     over hosts: the interval form of a controlled logical clock); the
//     offset is the interval's middle and the bound its half-width.  "realtime + collectives"
//     Constraints that contradict each other (a negative cycle) mean the
//     NTP bound is too small or the matching is wrong: the refinement is
//     dropped with a warning.
// A process without anchors keeps its own clock, unaligned ("no anchors"):
// comparisons with it are meaningless and reports say so.
//
// Anchor bound: the anchor's monotonic and realtime values are midpoints of
// reads taken around the capture clock read, so each is within
// +-read_window_ns/2 of the instant gpu_ns names. Files written before
// read_window_ns existed get ClockOptions::default_read_window_ns (stated in
// the method text).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/job/collectives.h"
#include "tracesmith/model/records.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

struct ClockOptions {
  // Assumed bound on the difference between two hosts' CLOCK_REALTIME. 1 ms:
  // what NTP keeps between machines of one LAN in the common case (chrony
  // with good peers does better, a VM after a pause worse); PTP setups can
  // pass a smaller one.
  uint64_t ntp_bound_ns = 1'000'000;
  // Read window assumed for anchors written before read_window_ns was
  // recorded. 10 us: well above what the capture measures (a
  // cuptiGetTimestamp call between two clock_gettime calls, about 1 us even
  // on a loaded VM), so the stated bound is safe.
  uint64_t default_read_window_ns = 10'000;
  // Assumed drift between the capture clock and the host clock for a
  // process with a single anchor (no drift measurement). 50 ppm: a crystal
  // oscillator's tolerance.
  double max_drift_ppm = 50;
  bool refine_with_collectives = true;
};

// What JobClock needs of one process (RankSummary holds it).
struct ProcessClockInput {
  std::string host;
  std::vector<model::ClockAnchor> anchors;  // this process's only
  uint64_t first_ns = 0, last_ns = 0;       // its events' span, capture clock
};

enum class ClockMethod : uint8_t {
  kNoAnchors = 0,
  kSameHost = 1,         // "same host: monotonic anchors"
  kRealtime = 2,         // "realtime anchors"
  kRealtimeRefined = 3,  // "realtime + collectives"
};
const char* ClockMethodName(ClockMethod m);

struct ProcessClock {
  ClockMethod method = ClockMethod::kNoAnchors;
  ClockMap map;                  // capture clock -> job time base (valid unless kNoAnchors)
  uint32_t host = 0;             // index into JobClock::hosts()
  int64_t offset_ns = 0;         // job time - capture time at the first anchor
  double drift_ppm = 0;          // capture clock rate vs the host clock, (rate - 1) x 1e6
  uint64_t anchor_bound_ns = 0;  // from the anchors alone (read window, drift)
  uint64_t bound_ns = 0;         // anchor bound + the host offset's half-width
  bool default_window = false;   // anchors without read_window_ns: the default assumed
  uint32_t anchors = 0;
  bool aligned() const { return method != ClockMethod::kNoAnchors; }
  uint64_t ToJob(uint64_t t) const { return aligned() ? map(t) : t; }
};

// Bound on the error of comparing a time of process a with one of process
// b: on one host the host offset cancels; UINT64_MAX when either is unaligned.
uint64_t PairBound(const ProcessClock& a, const ProcessClock& b);

struct HostClock {
  std::string name;
  int64_t offset_ns = 0;       // x_host - x_reference: job base - this host's realtime
  uint64_t half_width_ns = 0;  // the interval's half-width (0 on the reference host)
  uint64_t prior_half_width_ns = 0;
  uint32_t constraints = 0;  // collective pairs that bounded it
};

// The ends and starts of one collective's parts, per process, in the
// process's capture clock (kNone-like 0 start: not a member).
struct CollectiveTimes {
  CollectiveOp op = CollectiveOp::kUnknown;
  std::vector<uint64_t> start, end;  // by process index; start 0 = not a member
};

class JobClock {
 public:
  // `procs[i]` and each CollectiveTimes' vectors are indexed alike.
  static JobClock Build(std::span<const ProcessClockInput> procs,
                        std::span<const CollectiveTimes> collectives, const ClockOptions& options);

  const ProcessClock& process(size_t i) const { return procs_[i]; }
  size_t size() const { return procs_.size(); }
  const std::vector<HostClock>& hosts() const { return hosts_; }
  uint64_t PairBound(size_t i, size_t j) const { return analysis::PairBound(procs_[i], procs_[j]); }
  // The largest bound over aligned processes.
  uint64_t MaxBound() const;
  const std::vector<std::string>& warnings() const { return warnings_; }
  const ClockOptions& options() const { return options_; }

 private:
  std::vector<ProcessClock> procs_;
  std::vector<HostClock> hosts_;
  std::vector<std::string> warnings_;
  ClockOptions options_;
};

}  // namespace tracesmith::analysis
