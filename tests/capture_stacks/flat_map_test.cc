// FlatMapU64 (the stack collector's interning tables): the same answers as
// std::unordered_map over random keys, through growth on the spot and ahead.
#include "tracesmith/stacks/flat_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace tracesmith::stacks {
namespace {

TEST(FlatMapU64, SameAnswersAsAHashMapThroughGrowth) {
  FlatMapU64 m;
  std::unordered_map<uint64_t, uint32_t> want;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Half the keys again (found, not inserted), half new; keys never 0.
    const uint64_t key = (i % 2 && i > 10) ? (rng() % uint64_t(i) + 1) : (rng() | 1);
    auto [value, inserted] = m.Emplace(key, uint32_t(i));
    auto [it, w_inserted] = want.emplace(key, uint32_t(i));
    ASSERT_EQ(inserted, w_inserted) << i;
    ASSERT_EQ(*value, it->second) << i;
    if (i == 1000) m.Reserve(100000);  // grown ahead, entries kept
  }
  EXPECT_EQ(m.size(), want.size());
  EXPECT_LE(m.size() * 4, m.capacity() * 3);  // never past 3/4 full
  for (const auto& [k, v] : want) EXPECT_EQ(*m.Emplace(k, 0).first, v);
  EXPECT_EQ(m.size(), want.size());
}

TEST(FlatMapU64, ReserveKeepsItHalfFullAtMost) {
  FlatMapU64 m;
  m.Reserve(1000);
  EXPECT_GE(m.capacity(), 2000u);
  const size_t cap = m.capacity();
  for (uint64_t k = 1; k <= 1000; ++k) m.Emplace(k, uint32_t(k));
  EXPECT_EQ(m.capacity(), cap);  // no growth within what was reserved
  m.Reserve(10);                 // smaller: nothing changes
  EXPECT_EQ(m.capacity(), cap);
}

}  // namespace
}  // namespace tracesmith::stacks
