// GroupedQuantiles: the statistics of samples seen only through repeated passes equal those
// of the samples sorted (count, total, mean, max, nearest-rank p50 and p95), for groups
// small and large, ties, outliers, one value repeated, groups that appear late, and with
// limits small enough that every path runs: candidates kept, histograms narrowed, the
// budget of kept candidates and of histograms spent, ranges that shrink to one value.
#include "grouped_quantiles.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tracesmith::analysis {
namespace {

struct QuantileSample {
  uint32_t group;
  uint64_t value;
};

std::vector<QuantileSample> QuantileSamples(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<QuantileSample> out;
  for (uint32_t g = 0; g < 60; ++g) {
    const size_t n = g % 5 == 0 ? 20'000 : g % 3 == 0 ? 1 : rng() % 400;
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = 2'000 + rng() % 1'500;              // a launch's microseconds
      if (g % 7 == 0) v = 4'242;                       // one value repeated
      if (g % 11 == 0) v = rng() % 3;                  // ties at zero
      if (rng() % 100 == 0) v *= 1 + rng() % 100'000;  // outliers
      if (g == 25 && i == 7) v = uint64_t(1) << 40;    // far out
      out.push_back({g, v});
    }
  }
  std::shuffle(out.begin(), out.end(), rng);  // groups met in any order
  return out;
}

std::vector<DurationStats> SortedStats(const std::vector<QuantileSample>& samples) {
  std::vector<std::vector<uint64_t>> by(60);
  for (const QuantileSample& s : samples) by[s.group].push_back(s.value);
  std::vector<DurationStats> out(60);
  for (size_t g = 0; g < by.size(); ++g)
    if (!by[g].empty()) out[g] = ComputeDurationStats(std::span<uint64_t>(by[g]));
  return out;
}

void ExpectSameStats(const std::vector<DurationStats>& a, const std::vector<DurationStats>& b) {
  ASSERT_LE(a.size(), b.size());
  for (size_t g = 0; g < b.size(); ++g) {
    const DurationStats x = g < a.size() ? a[g] : DurationStats{};
    EXPECT_EQ(x.count, b[g].count) << g;
    EXPECT_EQ(x.total_ns, b[g].total_ns) << g;
    EXPECT_EQ(x.mean_ns, b[g].mean_ns) << g;
    EXPECT_EQ(x.max_ns, b[g].max_ns) << g;
    EXPECT_EQ(x.p50_ns, b[g].p50_ns) << g;
    EXPECT_EQ(x.p95_ns, b[g].p95_ns) << g;
  }
}

TEST(GroupedQuantiles, SameAsSortingTheSamples) {
  const std::vector<QuantileSample> samples = QuantileSamples(1);
  const std::vector<DurationStats> want = SortedStats(samples);
  for (const GroupedQuantiles::Limits& limits :
       {GroupedQuantiles::Limits{}, GroupedQuantiles::Limits{16, 2, 64, 300},
        GroupedQuantiles::Limits{2, 1, 1, 1}}) {
    int passes = 0;
    const std::vector<DurationStats> got = GroupedQuantiles::Compute(
        [&](const auto& emit) {
          ++passes;
          for (const QuantileSample& s : samples) emit(s.group, s.value);
        },
        limits);
    ExpectSameStats(got, want);
    if (limits.buckets == 4096) {
      EXPECT_LE(passes, 3);  // a count with coarse histograms, then two at most
    }
  }
}

// A value given as a function is called only while its group has a quantile open: never
// after the counting pass for a group whose values are under 16 (exact in the first pass's
// histogram), and only until its quantiles are found for one that needs narrowing.
TEST(GroupedQuantiles, ValuesAsFunctionsAreComputedOnlyWhenWanted) {
  std::vector<int> calls(2);
  auto pass = [&](const auto& emit) {
    for (uint64_t i = 0; i < 100'000; ++i) {
      emit(0, [&] { return ++calls[0], i % 10; });                       // one pass
      emit(1, [&] { return ++calls[1], i * 2'654'435'761u % 99'991; });  // narrowed
    }
  };
  const std::vector<DurationStats> got =
      GroupedQuantiles::Compute(pass, {4096, 1024, 1 << 20, 1 << 20});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].p50_ns, 4u);
  EXPECT_EQ(got[0].p95_ns, 9u);
  EXPECT_EQ(calls[0], 100'000);  // counted only
  EXPECT_GE(calls[1], 2 * 100'000);
  EXPECT_LE(calls[1], 3 * 100'000);
}

}  // namespace
}  // namespace tracesmith::analysis
