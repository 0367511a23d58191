// The kernel page (`tracesmith kernel TRACE NAME`): one sampled GPU function
// of a whole run, as Nsight Compute's source page shows one kernel profiled
// alone: every source line with samples (and its text when the file is
// readable here), and under each line its instructions with their SASS,
// samples and stall reasons; plus the function's stall reasons and the code
// that launched it (pc_samples.h).
//
// One launch (`kernel TRACE --launch N`): the page of the function of launch
// N (its correlation id) with only the samples joined to that launch. In
// continuous mode samples carry no launch, only their drain window (~20 ms,
// pc_samples.h): a window's samples go to the launches of the function that
// ran in it, split by how long each ran there, as the join to launching code
// does. A window the launch had to itself is all its own; one it shared is an
// estimate, and the page says how many it shared. The rows of those windows
// are read from the file again (their per-instruction counts are not kept).
//
// Exact counts (`profile --sass-counts`, sass_counts.h): each instruction's
// executions beside its samples, and the function's opcode histogram. A
// function counted and not sampled has a page of its counts alone. Counts
// are the sum over every launch: a page for one launch shows none.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/analysis/sass_counts.h"
#include "tracesmith/base/status.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::analysis {

struct KernelPageInstruction {
  uint32_t pc_offset = 0;
  std::string sass;  // empty: not disassembled
  uint64_t samples = 0;
  double share = 0;                // of the function's samples, %
  std::vector<StallShare> stalls;  // most samples first (share: of the instruction's)
  bool counted = false;            // it has exact counts (--sass-counts)
  uint64_t executed = 0, thread_executed = 0;
};

struct KernelPageLine {
  std::string file;  // empty: instructions without line information
  uint32_t line = 0;
  std::string source;  // the line's text, when `file` is readable here
  uint64_t samples = 0;
  double share = 0;                                 // of the function's samples, %
  uint64_t executed = 0, thread_executed = 0;       // its instructions' exact counts
  std::vector<KernelPageInstruction> instructions;  // by offset
};

// The launch of a page for one launch.
struct KernelPageLaunch {
  uint32_t correlation_id = 0, pid = 0, device = 0, stream = 0;
  uint64_t start_ns = 0, end_ns = 0;  // on the analysis clock
  uint64_t offset_ns = 0;             // start, from the trace's first event
  uint64_t index = 0, launches = 0;   // its place among the function's launches (1-based)
  std::string note;                   // e.g. one of a graph launch's kernels
  // The samples joined to it: none when no drain window of the function
  // overlaps it (the page then shows all launches' samples).
  bool joined = false;
  uint64_t samples = 0;            // counted
  uint64_t windows = 0;            // drain windows overlapping it
  uint64_t shared_windows = 0;     // of them, shared with other launches of the function
  uint64_t other_launches = 0;     // the launches it shared them with
  std::vector<StallShare> stalls;  // its own, most samples first
};

struct KernelPage {
  FunctionSamples function;                // the summary (stalls, sites, GPU time)
  bool sampled = true;                     // false: counts only (no GPU instruction samples)
  std::optional<FunctionCounts> counts;    // its exact counts and opcodes (--sass-counts)
  std::vector<KernelPageLine> lines;       // by file, then line
  std::vector<std::string> also_matched;   // other sampled functions the name matched
  std::optional<KernelPageLaunch> launch;  // a page for one launch (BuildLaunchPage)
};

// The page of the sampled function whose kernel name (or mangled name)
// contains `name`; of several, the one with most GPU time (the others are
// listed). Without a sampled match, the counted function (--sass-counts) with
// most executed instructions whose name contains it. NotFound naming the
// sampled and counted functions when none matches, or saying that the trace
// has neither samples nor counts.
StatusOr<KernelPage> BuildKernelPage(const CompactTrace& trace, std::string_view name,
                                     const CallSiteRules& rules);

// Which launch: its correlation id (`view --kind kernel` shows each
// launch's), and where that is not enough, its process (ids are per process)
// or part of its kernel's name (a graph launch's kernels share its id).
struct LaunchQuery {
  uint32_t correlation_id = 0;
  std::optional<uint32_t> pid;
  std::string name;
};
// The page of one launch of `trace`, loaded from the SBT file `path` (read
// again for the rows of the drain windows overlapping the launch). NotFound
// when no kernel launch has that id or its function has no samples;
// InvalidArgument when the query names several launches.
StatusOr<KernelPage> BuildLaunchPage(const CompactTrace& trace, const std::string& path,
                                     const LaunchQuery& query, const CallSiteRules& rules);
// The same with `source` (the one `trace` was loaded from) read again.
StatusOr<KernelPage> BuildLaunchPage(const CompactTrace& trace, format::TraceSource& source,
                                     const LaunchQuery& query, const CallSiteRules& rules);

void WriteKernelPageText(const KernelPage& page, std::ostream& out);
void WriteKernelPageJson(const KernelPage& page, std::ostream& out);

}  // namespace tracesmith::analysis
