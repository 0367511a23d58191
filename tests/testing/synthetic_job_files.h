// A synthetic job's ranks written as a run (STEM.rank0.sbt, STEM.rank1.sbt,
// ...) in `dir`, for the tests of the cross-rank analysis and export.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/temp_dir.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic_job.h"

namespace tracesmith::testing {

inline std::vector<std::string> WriteRanks(const model::SyntheticJob& job, const TempDir& dir,
                                           const std::string& stem = "run") {
  std::vector<std::string> files;
  for (uint32_t r = 0; r < job.options().ranks.size(); ++r) {
    files.push_back(dir / (stem + ".rank" + std::to_string(r) + ".sbt"));
    EXPECT_TRUE(format::WriteTraceFile(job.RankTrace(r), files.back()).ok()) << files.back();
  }
  return files;
}

}  // namespace tracesmith::testing
