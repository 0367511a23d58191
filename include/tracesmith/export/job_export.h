// Exports of a distributed job: every rank in one Perfetto trace, on the job
// clock (job/job_clock.h).
//
// Layout: one process per rank, named "rank R · host · pid P" (a pid that
// two ranks share on different hosts is renumbered, the real one stays in
// the name), with a thread track per host thread (CUDA API calls, NVTX
// ranges) and a track per GPU stream ("GPU d · stream s": kernels, copies,
// memsets). The kernels of one matched collective are linked by a flow,
// from the first arrival to the last (the last-arriving rank's kernel ends
// it), so the UI draws who waited for whom. Collective kernels carry
// `collective` (e.g. "all_reduce #12"), `comm` and `seq` annotations.
//
// Memory: two passes over the files, each rank read alone (summaries, then
// its events); the output is streamed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/job/job_report.h"

namespace tracesmith::exporter {

struct JobExportStats {
  uint32_t ranks = 0;
  uint64_t slices = 0;
  uint64_t flows = 0;  // collective kernels linked
  uint64_t bytes = 0;
  std::vector<std::string> warnings;  // files left out, clock and matching warnings
  std::vector<std::string> left_out;  // processes that are not ranks (LeaveOutLaunchers)
};

// What a run's files hold, from a metadata-only read (event chunks are
// checksummed, not decoded): its processes (a file that cannot be opened
// counts one: the export proper reports it) and each damaged file's report.
struct RunProcessScan {
  size_t processes = 0;
  std::vector<std::pair<std::string, format::ReadReport>> damage;  // damaged files only
};
RunProcessScan ScanRunProcesses(std::span<const std::string> files);

// Whether an export of the run is the job's (ExportJobPerfetto): Perfetto of
// several processes. The one rule of `tracesmith export` and tracesmith.export().
bool ExportsAsJob(ExportFormat format, const RunProcessScan& scan);

// `files`: per-rank traces, or merged files holding several processes.
StatusOr<JobExportStats> ExportJobPerfetto(std::span<const std::string> files,
                                           const std::string& out_path,
                                           const analysis::JobOptions& options = {});

}  // namespace tracesmith::exporter
