// JobReport: the cross-rank analysis of a distributed job.
//
// Input: one RankSummary per process (rank_summary.h; AnalyzeJob reads
// trace files one at a time and summarises each). The report puts every rank on the job clock
// (job_clock.h), matches collectives (collectives.h) and says:
//   per rank   GPU utilization, compute vs communication time, their overlap,
//              time blocked in collectives waiting for peers, step times,
//              and its clock offset with the bound and the method;
//   per job    straggler ranks (who arrives last at collectives, how often,
//              by how much, beside the clock bound), achieved collective
//              bandwidth vs size (nccl-tests' bus bandwidth, when bytes are
//              known), step-time variance across ranks, findings in words.
// Definitions (docs/distributed.md):
//   arrival       a rank's collective kernel start, on the job clock
//   start         the last arrival (the collective can move data from then)
//   end           the last rank's kernel end
//   skew          last arrival - first arrival
//   lateness      last arrival - median arrival of the other ranks
//   waiting       per rank, min(start, its end) - its arrival: time its
//                 kernel ran before every peer had arrived
//   duration      end - start, what the bandwidth is computed from
// Every cross-rank time compared is checked against the clock bound of the
// ranks involved: a number smaller than its bound is flagged, not trusted.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/job/collectives.h"
#include "tracesmith/job/job_clock.h"
#include "tracesmith/job/rank_summary.h"

namespace tracesmith::analysis {

struct AnalysisReport;  // analysis/report.h

// A collective a rank arrived at last: when, on its own capture clock, and
// how late.
struct LateArrival {
  uint64_t arrival_ns = 0, lateness_ns = 0;
};
// The median over a rank's steady steps (FirstSteadyStep on) of its lateness
// summed over the step. A collective counts in the step whose span holds its
// arrival: from the step's begin to the next step's begin (its GPU work may
// run after a host range ends), the last step's as long as the one before
// it. Steps without a late arrival count as 0. 0 with fewer than 2 steady
// steps (`*steps` says how many were used).
uint64_t StepLateness(const std::vector<RankStep>& steps, std::vector<LateArrival> late,
                      uint32_t* used_steps);

// Leaves out the processes that are not part of the job's work when the job
// has ranks: no rank, no GPU work, no collectives (torchrun's agent
// initialises CUDA, so it is captured too). Returns a line for each.
std::vector<std::string> LeaveOutLaunchers(std::vector<RankSummary>* summaries);

struct JobOptions {
  ClockOptions clock;
  size_t max_findings = 12;
};

struct RankReport {
  int32_t rank = -1;
  uint32_t pid = 0;
  std::string host, source, label;
  ProcessClock clock;
  uint64_t wall_ns = 0;  // its first to last event
  uint64_t gpu_busy_ns = 0, compute_ns = 0, comm_ns = 0, overlap_ns = 0;
  uint64_t wait_ns = 0;             // blocked in matched collectives waiting for peers
  uint32_t collectives = 0;         // NCCL kernels it ran
  uint32_t with_payload = 0;        // ... whose size NCCL's NVTX payload gave
  uint32_t matched = 0;             // ... matched across ranks
  uint32_t last_arrivals = 0;       // matched collectives it arrived at last, beyond the bound
  uint64_t median_lateness_ns = 0;  // over those
  // Its lateness summed over each steady step's collectives, the median over
  // those steps (StepLateness); 0 with fewer than 2 steady steps.
  uint64_t step_lateness_ns = 0;
  uint32_t lateness_steps = 0;  // the steps behind it
  uint32_t steps = 0;
  uint64_t step_median_ns = 0;
  HostTime host_time;  // host time before launches per steady step (rank_summary.h)
  std::vector<std::string> warnings;
};

struct JobCollective {
  uint32_t comm = 0, seq = 0;
  CollectiveOp op = CollectiveOp::kUnknown;
  std::string kind;         // rank 0's kernel description
  uint64_t bytes = 0;       // 0: unknown
  uint32_t ranks = 0;       // members whose clock is aligned (the others are left out)
  uint32_t group_size = 0;  // NCCL's communicator size (its NVTX payloads); 0: unknown
  uint64_t nccl_comm = 0;   // NCCL's communicator id (ditto); 0: unknown
  uint64_t first_arrival_ns = 0, start_ns = 0, end_ns = 0;  // job clock
  uint64_t skew_ns = 0, lateness_ns = 0;
  // Back to back (kBackToBackGapNs): the time from the end of the collective
  // before it on its communicator to its own end (the mean over its ranks,
  // each on its own clock), as a timed loop of them counts it; 0: it did not
  // follow that one within the gap on every rank.
  uint64_t back_to_back_ns = 0;
  uint32_t last_rank = 0;         // index into JobReport::ranks
  uint64_t bound_ns = 0;          // clock bound of comparing the last rank with the others
  bool last_significant = false;  // lateness > bound: the last rank is known
};

// Where a straggler's extra host time goes: its host time before launches
// per step (HostTime, rank_summary.h) against the median of the other
// ranks'. Named only when material: above kHostExcessShare of its median
// step and above the straggler's clock bound.
struct HostExcess {
  // The call site whose per-step host time exceeds the others' the most;
  // empty when the trace has no stacks, or when no one site's excess is
  // material but the total's is (spread over sites).
  std::string site;
  bool stacks = false;                  // the straggler's launches carry stacks
  uint64_t rank_ns = 0, others_ns = 0;  // per step: the straggler's, the others' median
  uint64_t excess_ns = 0;               // rank_ns - others_ns
  uint64_t step_ns = 0;                 // the straggler's median steady step
  uint32_t others = 0;                  // ranks compared with
  double share() const { return step_ns ? double(excess_ns) / double(step_ns) : 0; }
};
// 5%: below it a step's host time differs between ranks by noise (Python's
// own jitter, the allocator), and it would not explain a straggler.
inline constexpr double kHostExcessShare = 0.05;

struct Straggler {
  uint32_t rank_index = 0;
  uint32_t last_count = 0, of = 0;
  uint64_t median_late_ns = 0;  // per collective it was last at
  // Per steady step (RankReport::step_lateness_ns): what it costs the others
  // each step, when one large delay hides among many small ones (DDP: late
  // at the first gradient bucket's all-reduce, a little at the others).
  uint64_t step_late_ns = 0;
  uint32_t steps = 0;     // steps behind step_late_ns; 0: not known
  uint64_t bound_ns = 0;  // the clock bound beside it
  bool significant() const { return std::max(median_late_ns, step_late_ns) > bound_ns; }
  std::optional<HostExcess> host_excess;  // set only when material (and significant())
};

// nccl-tests' definitions (doc/PERFORMANCE.md): algbw = bytes / time;
// busbw = algbw x 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
// reduce-scatter and all-to-all, 1 for broadcast and reduce. `bytes` is the
// size nccl-tests calls "size" (the all-gather's whole output, the
// reduce-scatter's whole input).
//
// Two times per row. `median_ns`: each collective from its last arrival to
// its last end (the transfer once every rank is there). `back_to_back`: the
// time per collective of a loop that keeps the GPU's queue full, as
// nccl-tests measures a size (a timer around `iters` collectives and their
// completion, divided by `iters`, averaged over the ranks) or a program with
// CUDA events around such a loop: each one's time also holds the GPU's gap
// before it. It is the mean over the row's collectives that were back to
// back only (`back_to_back` of `count`): where the host cannot keep ahead,
// nccl-tests' mean also holds the slower launch-bound ones, this one not.
struct BandwidthRow {
  CollectiveOp op = CollectiveOp::kUnknown;
  uint64_t bytes = 0;
  uint32_t ranks = 0, count = 0;
  uint64_t median_ns = 0;
  double algbw_gbps = 0, busbw_gbps = 0;  // GB/s (1e9 bytes)
  uint32_t back_to_back = 0;              // of `count`; 0: the figures below unknown
  uint64_t back_to_back_mean_ns = 0;
  double back_to_back_busbw_gbps = 0;
};
// A collective is back to back when, on every rank taking part, its kernel
// started after the kernel of the collective before it on its communicator
// ended, and at most this long after (the rank's own clock); not for host
// collectives (gloo, MPI). A GPU starts a queued kernel a few us after the
// one before it ends (in the 2 x H200 check the program's CUDA events gave
// 1.6-2.9 us more per all-reduce than the kernels' own time); 8 us leaves
// room for slower launches. A longer gap is the host's (or
// a dependency's); a shorter one may still be a launch that came just in
// time rather than one that waited in the queue: either way the loop ran
// at that pace.
inline constexpr uint64_t kBackToBackGapNs = 8'000;
double BusBandwidthFactor(CollectiveOp op, uint32_t ranks);

struct StepVariance {
  uint32_t ranks_with_steps = 0;
  uint64_t min_median_ns = 0, median_median_ns = 0, max_median_ns = 0;
  uint32_t slowest_rank_index = 0;
  double cv = 0;  // stddev / mean of the ranks' median step times
};

struct JobReport {
  std::vector<RankReport> ranks;  // by rank (unknown ranks last, by source)
  std::vector<HostClock> hosts;
  ClockOptions clock_options;
  uint64_t max_bound_ns = 0;
  uint32_t comms = 0;
  std::vector<uint32_t> matched_per_comm;
  std::vector<uint64_t> comm_ids;  // NCCL's id per communicator; 0: a stream by first use
  std::vector<JobCollective> collectives;
  // Collectives whose last arrival is within the clock bound of the others'
  // median: no last rank can be named for them.
  uint32_t collectives_within_bound = 0;
  std::vector<Straggler> stragglers;  // most last arrivals first
  std::vector<BandwidthRow> bandwidth;
  StepVariance steps;
  std::vector<std::string> findings, warnings;
  // Processes that are not ranks of the job and were left out: no rank, no
  // GPU work and no collectives (a launcher such as torchrun's agent, which
  // initialises CUDA to count devices), when the job has ranks.
  std::vector<std::string> left_out;
};

// Puts summaries in report order: by rank, unknown ranks (-1) last in file order.
void SortRanks(std::vector<RankSummary>* summaries);

// The first half of the cross-rank step, shared by the report and the job
// exporters: collectives matched (by index, no clock needed), then the job
// clock the matched collectives refine. `summaries` in report order.
struct JobAlignment {
  MatchResult match;
  std::vector<CollectiveTimes> times;  // by match, capture clocks
  JobClock clock;
};
JobAlignment AlignJob(const std::vector<RankSummary>& summaries, const ClockOptions& options);

// The straggler's host excess over the other ranks (HostExcess), nullopt
// when not material or not measured (fewer than 2 steady steps on it or on
// every other rank). `bound_ns`: its clock bound.
std::optional<HostExcess> FindHostExcess(const std::vector<RankReport>& ranks, size_t straggler,
                                         uint64_t bound_ns);

// The cross-rank step: consumes only summaries.
JobReport BuildJobReport(std::vector<RankSummary> summaries, const JobOptions& options);

// Reads each file (a per-rank trace, or a merged file holding several
// processes), one at a time and streaming, into summaries, then builds the
// report. A file that cannot be read is left out with a warning (partial
// results); an error only when no file gives a process.
StatusOr<JobReport> AnalyzeJob(std::span<const std::string> files, const JobOptions& options);

// The cross-rank report that belongs with the analysis of `trace` (what
// `analyze` and tracesmith.analyze() add): when the trace describes two or
// more processes (Process rows: an imported trace's GPU rows under a pid
// of their own do not make a job), AnalyzeJob of `files` (the run's
// per-process traces, or the one merged file) when it finds two or more
// ranks; nullopt otherwise, with `*why` set when it was tried and failed.
std::optional<JobReport> JobReportOf(const CompactTrace& trace, std::span<const std::string> files,
                                     const JobOptions& options, std::string* why = nullptr);

void WriteJobText(const JobReport& report, std::ostream& out);
// One JSON object (the `ranks` object of `analyze --json`).
void WriteJobJson(const JobReport& report, std::ostream& out);
// `analyze --json`'s document (analysis::WriteJsonReport) with, when `job` is set (JobReportOf:
// the trace holds several processes of a job), its cross-rank report as the last member, "ranks".
void WriteJsonReport(const AnalysisReport& r, std::ostream& out, const JobReport* job);

}  // namespace tracesmith::analysis
