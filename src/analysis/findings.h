// Findings: the report's conclusions in plain words, each with its numbers.
// Rules are ordered by how much time they explain; at most 10 are kept.
#pragma once

#include <string>
#include <vector>

#include "tracesmith/analysis/report.h"

namespace tracesmith::analysis {

std::vector<std::string> ComputeFindings(const CompactTrace& trace, const AnalysisReport& r);

}  // namespace tracesmith::analysis
