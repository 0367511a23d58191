// The analysis report behind `tracesmith analyze`: where GPU time goes, how
// busy each GPU and stream is, why they idle, what bounds the step (critical
// path), and 3-10 findings in plain words.
//
// Every event is counted once: kernel statistics come from the kernel ops
// themselves (never from their API calls), busy time from interval unions.
// Percentiles are nearest-rank (the smallest value with at least q of the
// samples at or below it), so each is a real sample.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/analysis/app_counters.h"
#include "tracesmith/analysis/dependency_graph.h"
#include "tracesmith/analysis/gpu_metrics.h"
#include "tracesmith/analysis/kernel_timeouts.h"
#include "tracesmith/analysis/sass_counts.h"
#include "tracesmith/analysis/steps.h"
#include "tracesmith/base/statistics.h"
#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/timeline/call_site.h"
#include "tracesmith/timeline/compact_trace.h"
#include "tracesmith/timeline/pc_samples.h"
#include "tracesmith/timeline/timeline.h"

namespace tracesmith::analysis {

struct DurationStats {
  uint64_t count = 0, total_ns = 0, mean_ns = 0, p50_ns = 0, p95_ns = 0, max_ns = 0;
};
// Nearest-rank statistics of `values` (reordered in place).
DurationStats ComputeDurationStats(std::span<uint64_t> values);

struct NamedStats {
  std::string name;
  DurationStats stats;
  double share = 0;  // of total kernel time
};

struct NvtxStats {
  std::string name;
  uint64_t ranges = 0, range_ns = 0;    // host ranges and their summed duration
  uint64_t kernels = 0, kernel_ns = 0;  // kernels launched inside them
  double share = 0;                     // kernel_ns / total kernel time
};

struct CopyStats {
  std::string direction;  // "HtoD", "DtoH", ..., "memset"
  uint64_t count = 0, bytes = 0, busy_ns = 0;
  double gbps() const { return busy_ns ? double(bytes) / double(busy_ns) : 0.0; }
};

struct LaunchStats {
  std::string api;  // "cudaLaunchKernel", ...
  DurationStats api_duration;
  DurationStats launch_delay;  // first op start - API call start
  uint64_t outliers = 0;       // calls over 10x this API's median duration
};

struct LaunchOutlier {
  std::string api, op, call_site;
  uint64_t start_ns = 0;  // from trace start
  uint64_t api_ns = 0, delay_ns = 0;
};

struct GraphStats {
  uint32_t graph_id = 0;
  uint64_t launches = 0, kernels = 0, kernel_ns = 0;
};

struct PathShare {
  std::string name;
  uint64_t ns = 0;
};

struct AnalysisReport {
  std::string source;
  uint64_t events = 0;
  uint64_t window_begin = 0, window_end = 0, trace_begin = 0;
  uint64_t wall_ns() const { return window_end - window_begin; }
  // Whether the warm-up was set apart (LoadOptions::steady_state), and its share of the time
  // from the first kernel to the last GPU op (the window with it).
  bool warmup_apart() const { return active.warmup.ns() > 0 && steps.warmup > 0; }
  double warmup_share() const;
  // Set when the window is the active region (start-up and teardown apart).
  CompactTrace::ActiveRegion active;
  std::vector<std::string> startup_call_names, teardown_call_names,
      warmup_call_names;  // of active.*.longest_calls
  // Iterations (none when fewer than 3): those of the window, and before them the warm-up's
  // (steps.warmup of them, measured before the cut) when it was set apart (active.warmup).
  StepReport steps;
  std::string window_note;  // how the window was chosen, when not the default (e.g. "steps 3:10")
  uint64_t kernel_count = 0, kernel_ns = 0;
  TimelineResult timeline;
  std::vector<std::string> stream_names;  // parallel to timeline.streams
  std::vector<NamedStats> kernels;        // all, by total time
  std::vector<NamedStats> call_sites;     // empty when the trace has no stacks
  // Share of kernel time (percent) whose call site is a native frame without
  // a name ("libtorch_cuda.so+0x3a127c1": a trace not symbolized, or a module
  // that was not found); the text report then says how to name them.
  double unnamed_call_site_share = 0;
  std::vector<NvtxStats> nvtx;
  std::vector<CopyStats> copies;
  std::vector<LaunchStats> launches;
  std::vector<LaunchOutlier> outliers;  // the slowest (at most 5)
  std::vector<GraphStats> graphs;
  uint64_t graph_launches = 0;
  std::array<uint64_t, kNumPathCategories> critical_path_ns{};
  uint64_t critical_path_nodes = 0;
  std::vector<PathShare> critical_path_top;  // kernels and API calls on the path
  CompactStats compact;
  // GPU instruction samples per function (empty when the trace has none).
  PcSampleReport gpu_samples;
  // Exact instruction counts per function (`profile --sass-counts`; empty: none).
  std::vector<FunctionCounts> sass_counts;
  // GPU hardware metrics over time (empty when the trace has no samples).
  GpuMetricsReport gpu_metrics;
  // The program's own counters per step (tracesmith.counter; empty: none).
  AppCountersReport app_counters;
  // Kernels that ran past `profile --kernel-timeout` (empty: none, or not asked).
  std::vector<KernelTimeoutReport> kernel_timeouts;
  std::vector<std::string> findings;
  // Wall seconds per phase of BuildReport (for `benchmark analyze -v`).
  std::vector<std::pair<std::string, double>> phase_seconds;
};

struct AnalyzeOptions {
  size_t top = 15;  // rows per table in the text report
  // Kernels in "Inside the kernels (GPU instruction samples)" (analyze's --top when given).
  size_t sampled_kernels = 5;
};

// The unnamed call sites' share of kernel time (percent) at which the text
// report names the command that names them (`tracesmith symbolize`): 1%, so a
// symbolized trace with a few frames in stripped code stays quiet.
inline constexpr double kUnnamedCallSiteHintShare = 1.0;

// Computes the report from a finalized (and possibly restricted) trace.
AnalysisReport BuildReport(const CompactTrace& trace, const std::string& source,
                           const CallSiteRules& rules = {});

struct LoadOptions {
  std::string from, to;  // durations relative to trace start ("2ms"); empty = open
  std::string nvtx;      // restrict to work issued inside NVTX ranges with this name
  // Without from/to/nvtx: keep only the active region (first to last GPU op;
  // CompactTrace::RestrictToActiveRegion), unless `whole`.
  bool active_region = false;
  bool whole = false;
  // With the active region (and no --steps): when steps are found and the first is an outlier,
  // the window starts after the warm-up (WarmupSteps; CompactTrace::SetWarmupApart), which is
  // reported apart like start-up, so that the figures describe the steady state.
  bool steady_state = false;
  // "N" or "A:B": only those steps (DetectSteps, 1-based) of the window.
  std::string steps;
  // Called after each event chunk read (chunks done, event chunks in the
  // file's index): a command's progress line.
  std::function<void(uint64_t done, uint64_t total)> progress;
};
// How LoadCompactTrace keeps a trace's GPU ops and API calls (record_store.h), `records` of
// them by the file's index: TRACESMITH_RECORDS=arrays or packed chooses; unset or auto,
// packed from kPackedFromRecords on (where the arrays would take 1 GiB), arrays below; an
// error naming the variable for any other value.
inline constexpr uint64_t kPackedFromRecords = uint64_t(32) << 20;
StatusOr<RecordForm> ChooseRecordForm(uint64_t records);
// Streams an SBT file into a CompactTrace (bounded by the compact records,
// never the full rows), finalizes it and applies the restrictions. `report`
// (optional) receives what the reader recovered from a damaged file.
Status LoadCompactTrace(const std::string& path, const LoadOptions& options, CompactTrace* out,
                        format::ReadReport* report = nullptr);
// The same from any source: a file, a trace in memory, a run merged on the
// fly (cluster/run_source.h). `report`: the source's report() after the pass.
Status LoadCompactTrace(format::TraceSource& source, const LoadOptions& options, CompactTrace* out,
                        format::ReadReport* report = nullptr);
// Applies --from/--to/--nvtx to a finalized trace.
Status ApplyRestrictions(const LoadOptions& options, CompactTrace* trace);

void WriteTextReport(const AnalysisReport& r, const AnalyzeOptions& o, std::ostream& out);
void WriteJsonReport(const AnalysisReport& r, std::ostream& out);
// The same document with `ranks_json` (one JSON object: a job's cross-rank report,
// job/job_report.h's WriteJsonReport) as its last member, "ranks".
void WriteJsonReportWithRanks(const AnalysisReport& r, std::ostream& out,
                              std::string_view ranks_json);

}  // namespace tracesmith::analysis
