// Ranking the findings: the ten weightiest, plus those always said.
#include <gtest/gtest.h>

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
