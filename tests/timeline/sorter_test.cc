#include "tracesmith/timeline/sorter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <tuple>
#include <vector>

namespace tracesmith::analysis {
namespace {

TEST(WindowedSortTest, NearlySortedStaysInWindow) {
  std::vector<int> v(10000);
  for (int i = 0; i < 10000; ++i) v[i] = i;
  std::mt19937 rng(3);
  for (int i = 0; i + 10 < 10000; i += 7) std::swap(v[i], v[i + rng() % 10]);
  std::vector<int> want = v;
  std::sort(want.begin(), want.end());
  EXPECT_TRUE(WindowedSort(v.begin(), v.end(), std::less<>()));
  EXPECT_EQ(v, want);
}

TEST(WindowedSortTest, FarDisplacementFallsBackAndStillSorts) {
  std::vector<int> v(3 * kSortWindow);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i) + 1;
  v.back() = 0;  // must move past the whole window
  std::vector<int> want = v;
  std::sort(want.begin(), want.end());
  EXPECT_FALSE(WindowedSort(v.begin(), v.end(), std::less<>()));
  EXPECT_EQ(v, want);
}

TEST(WindowedSortTest, RandomInputIsSortedAndStable) {
  std::mt19937 rng(7);
  std::vector<std::pair<int, int>> v;
  for (int i = 0; i < 20000; ++i) v.push_back({static_cast<int>(rng() % 100), i});
  auto less = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::vector<std::pair<int, int>> want = v;
  std::stable_sort(want.begin(), want.end(), less);
  WindowedSort(v.begin(), v.end(), less);
  EXPECT_EQ(v, want);
}

// Union, intersection and max overlap against a bitmap over [0, 2000).
TEST(BoundedInsertionSortTest, GivesUpPastItsBudgetLeavingAPermutation) {
  std::vector<int> v = {1, 2, 3, 4, 0, 5};  // 0 must move 4 places
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  auto w = v;
  EXPECT_FALSE(BoundedInsertionSort(w.begin(), w.end(), std::less<>(), 3, SIZE_MAX));
  EXPECT_TRUE(std::is_permutation(w.begin(), w.end(), v.begin()));
  w = v;
  EXPECT_FALSE(BoundedInsertionSort(w.begin(), w.end(), std::less<>(), SIZE_MAX, 3));
  EXPECT_TRUE(std::is_permutation(w.begin(), w.end(), v.begin()));
  w = v;
  EXPECT_TRUE(BoundedInsertionSort(w.begin(), w.end(), std::less<>(), 4, 4));
  EXPECT_EQ(w, sorted);
}

// Keys displaced as CUPTI's delivery leaves them: every `every`-th swapped
// with one up to `distance` places later.
std::vector<uint64_t> Displaced(size_t n, size_t every, size_t distance) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i * 1000 + rng() % 200;
  for (size_t i = 0; i + distance < n; i += every) std::swap(v[i], v[i + 1 + rng() % distance]);
  return v;
}

TEST(SortNearlySortedTest, InPlaceWhenNearlySortedThroughBucketsWhenFarOut) {
  const size_t n = 100000;
  auto bucket_of = [](uint64_t k) { return size_t(k >> 17); };  // n * 1000 < 2^27: 1024 buckets
  const size_t buckets = (size_t(n) * 1000 >> 17) + 1;
  for (auto [every, distance, in_place] :
       {std::tuple<size_t, size_t, bool>{100, 64, true}, {10, 1024, false}}) {
    auto keys = Displaced(n, every, distance);
    auto want = keys;
    std::sort(want.begin(), want.end());
    std::vector<uint64_t> scratch(n);
    const uint64_t* got =
        SortNearlySorted(keys.data(), n, scratch.data(), buckets, bucket_of, std::less<>());
    EXPECT_EQ(got == keys.data(), in_place) << every << " " << distance;
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got)) << every << " " << distance;
  }
}

TEST(IntervalTest, AgainstBitmap) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::vector<Interval>> lists(1 + rng() % 5);
    std::vector<int> cover(2000, 0);
    std::vector<uint32_t> max_per_list_overlap(2000, 0);
    for (auto& l : lists) {
      uint64_t t = rng() % 50;
      while (t < 1900) {
        uint64_t len = 1 + rng() % 60;
        l.push_back({t, std::min<uint64_t>(t + len, 2000)});
        t += len + rng() % 40;  // disjoint and sorted within a list
      }
      for (const Interval& i : l)
        for (uint64_t x = i.start; x < i.end; ++x) cover[x]++;
    }
    std::vector<std::span<const Interval>> spans(lists.begin(), lists.end());
    std::vector<Interval> u = MergeUnion(spans);
    uint64_t covered = 0;
    int most = 0;
    for (int c : cover) covered += c > 0, most = std::max(most, c);
    EXPECT_EQ(TotalLength(u), covered);
    for (size_t i = 1; i < u.size(); ++i) EXPECT_LT(u[i - 1].end, u[i].start);
    EXPECT_EQ(MaxOverlap(spans), static_cast<uint32_t>(most));
    if (lists.size() >= 2) {
      uint64_t both = 0;
      std::vector<int> in_a(2000), in_b(2000);
      for (const Interval& i : lists[0])
        for (uint64_t x = i.start; x < i.end; ++x) in_a[x] = 1;
      for (const Interval& i : lists[1])
        for (uint64_t x = i.start; x < i.end; ++x) in_b[x] = 1;
      for (int x = 0; x < 2000; ++x) both += in_a[x] && in_b[x];
      EXPECT_EQ(IntersectionLength(lists[0], lists[1]), both);
    }
  }
}

TEST(IntervalTest, TouchingIntervalsDoNotOverlap) {
  std::vector<Interval> a = {{0, 10}}, b = {{10, 20}};
  std::vector<std::span<const Interval>> spans = {a, b};
  EXPECT_EQ(MaxOverlap(spans), 1u);
  EXPECT_EQ(IntersectionLength(a, b), 0u);
  std::vector<Interval> u = MergeUnion(spans);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0], (Interval{0, 20}));
}

}  // namespace
}  // namespace tracesmith::analysis
