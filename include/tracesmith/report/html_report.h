// `tracesmith report`: one self-contained HTML page about a trace — header
// (program, command line, GPUs, duration, capture cost and drops), findings,
// a zoomable timeline overview, top kernels and call sites, utilization and
// idle causes, steps, memory over time, copy bandwidth and the GPU-time
// flame graph.
//
// One source of truth: the page embeds the `analyze --json` report of the
// same window (analysis::WriteJsonReport, byte for byte; a job's cross-rank
// report, "ranks", included, whose findings the page lists first) and, when the trace
// has allocations, the `memory --json` report; the page's script renders
// from them plus the aggregates only the page needs (timeline bins, the
// flame tree, the header's metadata). Every script, style and datum is
// inline: the file opens from disk with no network access, and its size is
// bounded by the aggregates, not by the number of events (docs/report.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/analysis/report.h"
#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/report/flame.h"

namespace tracesmith::report {

struct HtmlReportOptions {
  analysis::LoadOptions load;  // the window, as `analyze` takes it
  analysis::CallSiteRules sites;
  uint32_t timeline_bins = 2000;  // per stream (fewer with many streams)
  FlameWeight flame_weight = FlameWeight::kGpuTime;
  // Flame subtrees under this share of the total are left off the page
  // (1e-4: a box under 0.01% is under a pixel wide at any screen width).
  double flame_min_share = 1e-4;
  // And at most about this many boxes (the page's flame data stays near
  // 1 MB whatever the number of distinct stacks).
  size_t flame_max_nodes = 20000;
  // The run's per-process traces when the trace merges several (as `analyze`
  // reads them for the cross-rank report); empty: the source's own files.
  std::vector<std::string> run_files;
  // The trace as the user named it (files, a directory, a capture stem), for
  // the page's hint to export it for Perfetto; empty: the page's source.
  std::string input_names;
  // Called as each phase starts ("reading and analysing", ...), `step` of `steps`.
  std::function<void(int step, int steps, std::string_view what)> progress;
};

// What a page holds, for the command's summary line.
struct HtmlReportSummary {
  uint64_t bytes = 0;
  uint64_t events = 0, kernels = 0;
  size_t lanes = 0, bins = 0, steps = 0, findings = 0;
  size_t flame_stacks = 0, flame_nodes = 0, memory_series = 0;
};

// The page for the trace at `path`; `source` names it in the page (as
// `analyze` names it in its report).
StatusOr<std::string> BuildHtmlReport(const std::string& path, const std::string& source,
                                      const HtmlReportOptions& options,
                                      HtmlReportSummary* summary = nullptr,
                                      format::ReadReport* damage = nullptr);

// BuildHtmlReport written to `out_path` through AtomicFile (never a partial
// file; never over `path` itself). Checking for an existing file (--force) is
// the caller's.
StatusOr<HtmlReportSummary> WriteHtmlReport(const std::string& path, const std::string& source,
                                            const std::string& out_path,
                                            const HtmlReportOptions& options,
                                            format::ReadReport* damage = nullptr);

// The same from any trace source (a run merged on the fly:
// cluster/run_source.h); never written over one of input.files().
StatusOr<std::string> BuildHtmlReport(format::TraceSource& input, const std::string& source,
                                      const HtmlReportOptions& options,
                                      HtmlReportSummary* summary = nullptr,
                                      format::ReadReport* damage = nullptr);
StatusOr<HtmlReportSummary> WriteHtmlReport(format::TraceSource& input, const std::string& source,
                                            const std::string& out_path,
                                            const HtmlReportOptions& options,
                                            format::ReadReport* damage = nullptr);

// The JSON embedded in the page's <script id="..."> blocks, as the page
// holds it, with "<" written as "\u003c" so that no string in it can close
// the script element. Exposed for tests.
std::string EscapeJsonForScript(std::string_view json);

}  // namespace tracesmith::report
