// base/statistics.h: one rule, the nearest rank, for every median and
// percentile TraceSmith reports.
#include "tracesmith/base/statistics.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tracesmith {
namespace {

TEST(Statistics, NearestRankIsTheCeilOfQTimesNthSmallest) {
  EXPECT_EQ(NearestRankIndex(10, 0.5), 4u);     // the 5th of 10
  EXPECT_EQ(NearestRankIndex(10, 0.95), 9u);    // ceil(9.5) = 10th
  EXPECT_EQ(NearestRankIndex(100, 0.99), 98u);  // the 99th of 100
  EXPECT_EQ(NearestRankIndex(7, 0.0), 0u);      // q = 0: the smallest
  EXPECT_EQ(NearestRankIndex(7, 1.0), 6u);      // q = 1: the largest
  EXPECT_EQ(NearestRankIndex(0, 0.5), 0u);      // nothing to rank
}

TEST(Statistics, MedianIsAValueThatOccurredTheLowerOneForAnEvenCount) {
  EXPECT_EQ(Median(std::vector<uint64_t>{4, 1, 3, 2}), 2u);  // not 2.5, not 3
  EXPECT_EQ(Median(std::vector<uint64_t>{5, 1, 3}), 3u);
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{0.3, 0.1}), 0.1);
  EXPECT_EQ(Median(std::vector<uint64_t>{}), 0u);
}

TEST(Statistics, QuantileLeavesItsArgumentAloneNearestRankReordersInPlace) {
  const std::vector<int> v = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  EXPECT_EQ(Quantile(v, 0.9), 8);
  EXPECT_EQ(v.front(), 9);
  std::vector<int> w = v;
  EXPECT_EQ(NearestRank(std::span<int>(w), 0.2), 1);
}

}  // namespace
}  // namespace tracesmith
