// Findings: the report's conclusions in plain words, each with its numbers.
// Rules are ordered by how much time they explain; at most 10 are kept, plus
// those always said (what the figures leave out, data quality).
#pragma once

#include <string>
#include <vector>

#include "tracesmith/analysis/report.h"

namespace tracesmith::analysis {

std::vector<std::string> ComputeFindings(const CompactTrace& trace, const AnalysisReport& r);

// One finding before ranking.
struct Finding {
  double weight;  // share of wall time (or of GPU time) the finding explains
  std::string text;
  // What the figures do not cover (warm-up, start-up) and data quality:
  // said even when ten weightier findings fill the list.
  bool always = false;
};
// Rule 15 (gpu_metric_findings.cc): what the GPU metrics say of the kernels
// with the most GPU time.
void AddGpuMetricFindings(const AnalysisReport& r, std::vector<Finding>* out);

// The texts of the ten weightiest findings plus those always said, in
// weight order (stable).
std::vector<std::string> RankFindings(std::vector<Finding> findings);

}  // namespace tracesmith::analysis
