// BuildReport runs its phases on three threads (the steps beside the correlation indexes;
// then the timeline and critical path, the launch tables, the rest): this binary runs under
// ThreadSanitizer too (label tsan), where a phase writing what another reads fails it. Here: every
// phase timed, and the report the same from one run to the next and in both record forms.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tracesmith/analysis/report.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::analysis {
namespace {

std::string ReportJson(const model::Trace& t, RecordForm form) {
  CompactTrace c;
  c.SetRecordForm(form);
  c.IngestAll(t);
  c.Finalize();
  AnalysisReport r = BuildReport(c, "synthetic");
  std::vector<std::string> names;
  for (const auto& [name, seconds] : r.phase_seconds) {
    names.push_back(name);
    EXPECT_GE(seconds, 0.0) << name;
  }
  const std::vector<std::string> want = {"steps",
                                         "timeline",
                                         "critical_path",
                                         "launches",
                                         "copies+graphs",
                                         "correlation indexes",
                                         "waiting for the steps",
                                         "kernels",
                                         "nvtx",
                                         "waiting for the other threads",
                                         "findings"};
  EXPECT_EQ(names, want);
  std::ostringstream out;
  WriteJsonReport(r, out);
  return out.str();
}

TEST(ParallelReport, SameReportEveryRunAndInBothForms) {
  model::SyntheticOptions so;
  so.kernels = 6000;
  so.seed = 11;
  const model::Trace t = model::MakeSyntheticTrace(so);
  const std::string first = ReportJson(t, RecordForm::kArrays);
  ASSERT_NE(first.find("\"kernels\""), std::string::npos);
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(ReportJson(t, RecordForm::kArrays), first) << "run " << run;
    EXPECT_EQ(ReportJson(t, RecordForm::kPacked), first) << "run " << run;
  }
}

}  // namespace
}  // namespace tracesmith::analysis
