// RankSummary: what the cross-rank analysis needs of one process, small
// enough that a 512-rank job's summaries fit anywhere.
//
// A rank's trace (perhaps 1 GB) is read once, streaming, into a
// CompactTrace of that process alone, summarised, and dropped before the
// next rank is read: the job analysis holds one rank's working set plus the
// summaries (a few hundred bytes per collective and step). Times stay in
// the process's capture clock with its anchors beside them; the job clock
// (job_clock.h) is applied only when ranks are put side by side. The
// cross-rank step (BuildJobReport, job_report.h) consumes only the summaries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/job/collectives.h"
#include "tracesmith/job/job_clock.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

struct RankStep {
  uint64_t begin_ns = 0, end_ns = 0;  // capture clock
};

// The steady steps of a rank: the first (warm-up) is left out when there
// are 4 or more. Returns the index of the first steady step.
inline size_t FirstSteadyStep(size_t steps) { return steps >= 4 ? 1 : 0; }

// Host time before launches, per steady step: on each host thread, the time
// outside CUDA API calls (Python, a data loader, the allocator's host side, a
// sleep, ...) is attributed to the call site of the next call on that thread
// that launches GPU work (a kernel, copy or memset; CallSiteNamer, as "Kernel
// GPU time by launch call site"), through any calls that launch nothing in
// between (an event record, a synchronize: the time inside them is not
// counted), and to the steps the time falls in (a sleep at the end of one step,
// ended by the next step's first launch, counts in the first; time outside
// every step is not counted, nor time that no launch follows). Not counted
// either: time inside the thread's host collectives (a gloo/MPI range: waiting
// for peers on the host, collectives.h). Per site, the median over the steady
// steps; only the largest sites are kept (kHostSites), so a summary grows by a
// small bounded table.
struct HostSiteTime {
  std::string site;
  uint64_t step_median_ns = 0;
};
struct HostTime {
  uint32_t steps = 0;           // steady steps measured; 0: not measured (fewer than 2)
  uint64_t step_median_ns = 0;  // all launches' host time, median per step
  bool stacks = false;          // launch calls carry call stacks
  // Largest per-step medians first (non-zero only), at most kHostSites.
  std::vector<HostSiteTime> sites;
  // Sites left out beyond those listed: each has a median at most the last listed.
  bool more_sites = false;
};
// 16: a step's host time is dominated by a few lines; enough to compare the
// straggler's largest sites with the same sites elsewhere.
inline constexpr size_t kHostSites = 16;

struct RankSummary {
  std::string source;  // the file it came from
  uint32_t pid = 0;
  int32_t rank = -1;                        // the Process row's rank; -1: unknown
  std::string host;                         // hostname ("" unknown)
  std::vector<model::ClockAnchor> anchors;  // this process's
  uint64_t first_ns = 0, last_ns = 0;       // span of its GPU ops and API calls
  // GPU time, unions over all its streams (each instant counted once):
  // communication = NCCL kernels (name contains "nccl", as the analyze
  // report's definition), compute = every other kernel.
  uint64_t gpu_busy_ns = 0, compute_ns = 0, comm_ns = 0, overlap_ns = 0;
  uint64_t kernels = 0;
  ProcessCollectives collectives;
  std::string step_method;  // DetectSteps' method; empty: no steps
  std::vector<RankStep> steps;
  HostTime host_time;                 // host time before launches, per steady step
  std::vector<std::string> warnings;  // damage, missing anchors, ...

  ProcessClockInput ClockInput() const { return {host, anchors, first_ns, last_ns}; }
  // "rank 3 (host-a, pid 1234)"; without a rank "pid 1234 on host-a".
  std::string Label() const;
};

// Summary of process `pid` of a finalized trace (its times as recorded: a
// trace of that process alone keeps its capture clock).
RankSummary SummarizeProcess(const CompactTrace& trace, uint32_t pid, const std::string& source);

// Every process of an SBT file, one summary each. The file's metadata is
// read first; a file of one process is then streamed once, a merged file
// once per process (a CompactTrace of one process at a time: bounded by
// the largest process, not the file). A damaged file gives what it holds
// with a warning; an unreadable one is an error.
StatusOr<std::vector<RankSummary>> SummarizeFile(const std::string& path);

// Streams one process of `path` into `out` (every process when `pid` is
// null) and finalizes it: the capture clock is kept (one process, nothing to
// align). `report` (optional) receives what the reader recovered.
Status LoadProcessTrace(const std::string& path, const uint32_t* pid, CompactTrace* out,
                        format::ReadReport* report = nullptr);

}  // namespace tracesmith::analysis
