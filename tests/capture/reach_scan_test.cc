// ReachScanner on synthetic images: which allocations pointers stored in
// memory reach, with the depth, byte and probe budgets.
#include "replay_capture/reach_scan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

namespace tracesmith::replay_capture {
namespace {

constexpr uint64_t kA = 0x7f0000000000, kB = 0x7f0000200000, kC = 0x7f0000400000,
                   kD = 0x7f0000600000, kE = 0x7f0000800000;

// An image of `words` 8-byte words, with `at` (word index -> value) set.
std::vector<uint8_t> Image(size_t words, const std::map<size_t, uint64_t>& at) {
  std::vector<uint8_t> v(words * 8, 0);
  for (const auto& [k, x] : at) std::memcpy(v.data() + 8 * k, &x, 8);
  return v;
}

TEST(ReachScan, PointerArrayReachesEachAllocationOnceInOrderOfItsFirstPointer) {
  ReachScanner s({{kB, 4096}, {kC, 4096}, {kD, 4096}, {kA, 256}}, nullptr, {});
  s.AddRoot({kA, 256});
  // A batched GEMM's pointer array: C, B, D, and an interior pointer into B.
  auto found = s.Scan({kA, 256}, Image(32, {{0, kC}, {1, kB + 64}, {2, kD}, {5, kB + 4000}}), 0);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].range.address, kC);
  EXPECT_EQ(found[1].range.address, kB);
  EXPECT_EQ(found[2].range.address, kD);
  EXPECT_EQ(found[1].range.size, 4096u);
  EXPECT_EQ(found[1].via, kA);
  EXPECT_EQ(found[1].first_offset, 8u);
  EXPECT_EQ(found[1].last_offset, 40u);
  EXPECT_EQ(found[1].pointers, 2u);
  EXPECT_EQ(found[0].depth, 1u);
  EXPECT_EQ(s.bytes_taken(), 3 * 4096u);
  EXPECT_EQ(s.summary().probes, 0u);
  // Scanning again finds nothing new: each allocation is taken once.
  EXPECT_TRUE(s.Scan({kA, 256}, Image(32, {{0, kC}}), 0).empty());
}

TEST(ReachScan, SelfPointersPointersIntoRootsAndSmallWordsAreNotReached) {
  ReachScanner s({{kA, 4096}, {kB, 4096}}, nullptr, {});
  s.AddRoot({kA, 4096});
  s.AddRoot({kB, 4096});
  auto found = s.Scan({kA, 4096}, Image(16, {{0, kA + 8}, {1, kB}, {2, 17}, {3, 4095}}), 0);
  EXPECT_TRUE(found.empty());
}

TEST(ReachScan, LinkedListAcrossAllocationsStopsAtTheDepthLimitAndCountsWhatIsLeft) {
  ReachLimits limits;
  limits.max_depth = 2;
  ReachScanner s({{kA, 64}, {kB, 64}, {kC, 64}, {kD, 64}}, nullptr, limits);
  s.AddRoot({kA, 64});
  auto b = s.Scan({kA, 64}, Image(8, {{1, kB}}), 0);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].depth, 1u);
  auto c = s.Scan(b[0].range, Image(8, {{1, kC}}), b[0].depth);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].range.address, kC);
  EXPECT_EQ(c[0].via, kB);
  EXPECT_EQ(c[0].depth, 2u);
  auto d = s.Scan(c[0].range, Image(8, {{1, kD}}), c[0].depth);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(s.summary().ranges_past_depth, 1u);
  // Seen again from elsewhere: still counted once.
  EXPECT_TRUE(s.Scan(c[0].range, Image(8, {{3, kD}}), c[0].depth).empty());
  EXPECT_EQ(s.summary().ranges_past_depth, 1u);
}

TEST(ReachScan, ByteBudgetTakesAllocationsInPointerOrderAndCountsTheRest) {
  ReachLimits limits;
  limits.max_bytes = 250;
  ReachScanner s({{kB, 100}, {kC, 200}, {kD, 100}}, nullptr, limits);
  s.AddRoot({kA, 64});
  auto found = s.Scan({kA, 64}, Image(8, {{0, kB}, {1, kC}, {2, kD}}), 0);
  ASSERT_EQ(found.size(), 2u);  // B (100), then C would exceed 250, D fits
  EXPECT_EQ(found[0].range.address, kB);
  EXPECT_EQ(found[1].range.address, kD);
  EXPECT_EQ(s.summary().ranges_over_budget, 1u);
  EXPECT_EQ(s.summary().bytes_over_budget, 200u);
  EXPECT_EQ(s.bytes_taken(), 200u);
}

TEST(ReachScan, AllocationsTheTableLacksAreProbedOncePerWordWithinTheProbeBudget) {
  int calls = 0;
  auto probe = [&](uint64_t a) -> std::optional<MemRange> {
    ++calls;
    if (a >= kE && a < kE + 1024) return MemRange{kE, 1024};
    return std::nullopt;
  };
  ReachLimits limits;
  limits.max_probes = 3;
  ReachScanner s({}, probe, limits);
  s.AddRoot({kA, 256});
  // kE+8 probes and finds E; kE+16 is then in the table (no probe); 5 and
  // 0x1234 are below 4 GiB (never probed); 0x7f1000000000 is probed twice
  // in the image but once in all; after the third probe the rest are counted.
  auto found = s.Scan({kA, 256},
                      Image(32, {{0, kE + 8},
                                 {1, kE + 16},
                                 {2, 5},
                                 {3, 0x1234},
                                 {4, 0x7f1000000000},
                                 {5, 0x7f1000000000},
                                 {6, 0x7f2000000000},
                                 {7, 0x7f3000000000},
                                 {8, 0x7f4000000000},
                                 {9, 0x7f4000000000}}),
                      0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].range.address, kE);
  EXPECT_EQ(found[0].pointers, 2u);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(s.summary().probes, 3u);
  EXPECT_EQ(s.summary().words_unresolved, 2u);  // 0x7f3..., 0x7f4... (distinct)
}

// A probe that finds nothing and counts its calls.
ReachScanner::Probe FindsNothing(int* calls) {
  return [calls](uint64_t) -> std::optional<MemRange> {
    ++*calls;
    return std::nullopt;
  };
}

TEST(ReachScan, FloatDataReachesNothingAndCostsNoProbes) {
  int calls = 0;
  auto probe = FindsNothing(&calls);
  ReachScanner s({{kB, 1 << 20}}, probe, {});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::vector<float> f(1 << 18);
  for (float& x : f) x = u(rng);
  std::span<const uint8_t> image(reinterpret_cast<const uint8_t*>(f.data()), f.size() * 4);
  EXPECT_TRUE(s.Scan({kA, image.size()}, image, 0).empty());
  EXPECT_EQ(calls, 0);
}

TEST(ReachScan, PackedIntegerIndicesReachNothingAndCostNoProbes) {
  int calls = 0;
  auto probe = FindsNothing(&calls);
  ReachScanner s({{kB, 1 << 20}}, probe, {});
  s.AddRoot({kA, 1 << 20});
  // An int32 index array (embedding ids, CSR columns): two indices per
  // 8-byte word, so most words are between 4 GiB and 2^57.
  std::vector<int32_t> idx(1 << 18);
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = int32_t(k % 30000 + 1);
  std::span<const uint8_t> image(reinterpret_cast<const uint8_t*>(idx.data()), idx.size() * 4);
  EXPECT_TRUE(s.Scan({kA, image.size()}, image, 0).empty());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(s.summary().words_unresolved, 0u);
}

TEST(ReachScan, AnAllocationOverlappingASnapshottedRangeIsNotTaken) {
  // A requested range covers part of B: taking B as well would overlap it.
  ReachScanner s({{kB, 4096}}, nullptr, {});
  s.AddRoot({kA, 64});
  s.AddRoot({kB + 1024, 512});
  EXPECT_TRUE(s.Scan({kA, 64}, Image(8, {{0, kB}}), 0).empty());
}

}  // namespace
}  // namespace tracesmith::replay_capture
