// Before/after comparison of two traces: per-kernel and per-call-site count
// and GPU time differences, largest absolute time change first; and, when
// either trace has GPU instruction samples, how each kernel's samples moved
// between its lines and stall reasons (pc_diff.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tracesmith/analysis/pc_diff.h"
#include "tracesmith/analysis/report.h"

namespace tracesmith::analysis {

struct DiffRow {
  std::string name;
  uint64_t count_a = 0, count_b = 0;
  uint64_t total_a = 0, total_b = 0;  // ns
  int64_t delta_ns() const { return static_cast<int64_t>(total_b) - static_cast<int64_t>(total_a); }
  int64_t delta_count() const {
    return static_cast<int64_t>(count_b) - static_cast<int64_t>(count_a);
  }
};

struct TraceDiff {
  std::string a, b;
  // Printed before the numbers, e.g. that one side was read from a damaged
  // file and the comparison covers only its readable part.
  std::vector<std::string> warnings;
  uint64_t wall_a = 0, wall_b = 0;
  uint64_t kernels_a = 0, kernels_b = 0;
  uint64_t kernel_ns_a = 0, kernel_ns_b = 0;
  std::vector<DiffRow> kernels;     // by |delta_ns| descending, then name
  std::vector<DiffRow> call_sites;  // same; empty when neither trace has stacks
  // GPU instruction samples (DiffTraceFiles / DiffTraceSources only: DiffReports has the
  // reports' hottest lines, not all of them); empty when neither has any.
  PcSampleDiff samples;
};

TraceDiff DiffReports(const AnalysisReport& a, const AnalysisReport& b);
// Analyses the trace files a (baseline) and b and compares them: what
// `tracesmith diff` and tracesmith.diff do. A damaged side is an error with
// `strict` (ReadReport::DamageStatus); otherwise it is compared in its
// readable part, named in the diff's warnings, and its ReadReport goes to
// damage_a / damage_b (optional) for the caller to tell the user.
StatusOr<TraceDiff> DiffTraceFiles(const std::string& a, const std::string& b,
                                   const LoadOptions& load, bool strict,
                                   format::ReadReport* damage_a = nullptr,
                                   format::ReadReport* damage_b = nullptr);
// The same from two trace sources (runs merged on the fly: cluster/run_source.h);
// the reports are named by source.name() (TraceDiff::a and b: empty for a run).
StatusOr<TraceDiff> DiffTraceSources(format::TraceSource& a, format::TraceSource& b,
                                     const LoadOptions& load, bool strict,
                                     format::ReadReport* damage_a = nullptr,
                                     format::ReadReport* damage_b = nullptr);
void WriteTextDiff(const TraceDiff& d, size_t top, std::ostream& out);
void WriteJsonDiff(const TraceDiff& d, std::ostream& out);

}  // namespace tracesmith::analysis
