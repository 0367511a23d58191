// Ranking the findings: the ten weightiest, plus those always said.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "findings.h"

namespace tracesmith::analysis {
namespace {

// Twelve weighty findings push out the lighter ones, but not what the
// figures leave out (the warm-up, start-up) or data quality.
TEST(FindingsRank, WhatTheFiguresLeaveOutIsSaidWhenTenWeightierFillTheList) {
  std::vector<Finding> in;
  for (int i = 0; i < 12; ++i) in.push_back({10.0 + i, "weighty " + std::to_string(i)});
  in.push_back({0.6, "warm-up", true});
  in.push_back({0.55, "light"});
  in.push_back({0.5, "start-up", true});
  in.push_back({-1, "no clock anchor", true});
  const std::vector<std::string> out = RankFindings(in);
  ASSERT_EQ(out.size(), 13u);
  EXPECT_EQ(out[0], "weighty 11");
  EXPECT_EQ(out[9], "weighty 2");
  EXPECT_EQ(out[10], "warm-up");
  EXPECT_EQ(out[11], "start-up");
  EXPECT_EQ(out[12], "no clock anchor");
}

TEST(FindingsRank, FewFindingsAreAllSaidInWeightOrder) {
  const std::vector<std::string> out =
      RankFindings({{0.5, "b", true}, {2.0, "a"}, {0.5, "c"}, {-1, "d", true}});
  EXPECT_EQ(out, (std::vector<std::string>{"a", "b", "c", "d"}));
}

}  // namespace
}  // namespace tracesmith::analysis

namespace tracesmith::analysis {
namespace {

// Rule 15's third case: a kernel that keeps neither the SMs nor DRAM busy;
// and nothing for a kernel under 5% of GPU time or mostly shared.
TEST(GpuMetricFindings, NeitherUnitBusyIsLatencyBound) {
  AnalysisReport r;
  r.kernel_ns = 1000;
  GpuMetricsReport& g = r.gpu_metrics;
  g.columns = {"TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
               "FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed"};
  g.labels = {"SM throughput", "DRAM throughput"};
  g.units = {"%", "%"};
  g.kernels = {{"small_kernel", 400, 0, {12.0, 8.0}, {NAN, NAN}},
               {"tiny", 40, 0, {1.0, 1.0}, {NAN, NAN}},         // 4% of GPU time
               {"crowded", 100, 300, {1.0, 1.0}, {2.0, 2.0}}};  // alone a quarter
  std::vector<Finding> out;
  AddGpuMetricFindings(r, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text.rfind("Kernel small_kernel (40.0% of GPU time, alone on its GPU 100% of "
                              "it) kept neither the SMs (throughput 12% of peak) nor DRAM (8%) "
                              "busy: latency-bound",
                              0),
            0u)
      << out[0].text;
  EXPECT_DOUBLE_EQ(out[0].weight, 0.4);
}

}  // namespace
}  // namespace tracesmith::analysis
