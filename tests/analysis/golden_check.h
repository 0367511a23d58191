// The text report against tests/analysis/golden/<name>.txt, for the golden
// tests of synthetic and real traces. TS_UPDATE_GOLDEN=1 rewrites the file and
// fails the test (nothing compared): review the diff, then run again without it.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "testing/source_paths.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith::analysis {

inline void CheckGolden(const AnalysisReport& r, const std::string& name) {
  std::ostringstream text;
  WriteTextReport(r, AnalyzeOptions{}, text);
  const std::string path =
      tracesmith::testing::TestSourceDir() + "/tests/analysis/golden/" + name + ".txt";
  if (std::getenv("TS_UPDATE_GOLDEN")) {
    ASSERT_TRUE(WriteStringToFile(path, text.str()).ok());
    ADD_FAILURE() << "rewrote " << path
                  << " (TS_UPDATE_GOLDEN is set: nothing compared; review the diff, then run "
                     "again without it)";
    return;
  }
  auto want = ReadFileToString(path);
  ASSERT_TRUE(want.ok()) << path << ": " << want.status().ToString()
                         << " (TS_UPDATE_GOLDEN=1 creates it)";
  EXPECT_EQ(text.str(), *want) << "report differs from " << path;
}

}  // namespace tracesmith::analysis
