// PackedLanes: records read back by global index as they were added, lane numbers put back,
// whatever the order of reading (in order, two lanes merged, at random), from several
// threads, and never from another store's cached blocks.
#include "tracesmith/timeline/packed_lanes.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace tracesmith::analysis {
namespace {

struct Row {
  uint64_t start = 0, end = 0;
  uint32_t name = 0, lane = 0;
  bool operator==(const Row&) const = default;
};
struct RowCodec {
  using Record = Row;
  static constexpr size_t kFields = 3;
  static std::array<uint64_t, 3> Encode(const Row& r) { return {r.start, r.end - r.start, r.name}; }
  static Row Decode(const std::array<uint64_t, 3>& f, uint32_t lane) {
    return {f[0], f[0] + f[1], uint32_t(f[2]), lane};
  }
};
using Lanes = PackedLanes<RowCodec>;

// Lanes of the given lengths (an empty one among them), and the rows as structs.
Lanes Make(const std::vector<size_t>& lengths, uint64_t seed, std::vector<Row>* rows) {
  std::mt19937_64 rng(seed);
  Lanes out;
  for (uint32_t l = 0; l < lengths.size(); ++l) {
    Lanes::Packed packed;
    uint64_t t = 1'000'000 * (l + 1);
    for (size_t i = 0; i < lengths[l]; ++i) {
      const uint64_t start = t += 1'000 + rng() % 20'000;
      rows->push_back({start, start + rng() % 9'000, uint32_t(rng() % 40), l + 10});
      packed.Append(RowCodec::Encode(rows->back()));
    }
    out.AddLane(l + 10, std::move(packed));
  }
  return out;
}

TEST(PackedLanes, EveryOrderOfReadingGivesTheRecordsAdded) {
  std::vector<Row> rows;
  const Lanes lanes = Make({1000, 0, 129, 5000, 1}, 3, &rows);
  ASSERT_EQ(lanes.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(lanes[i], rows[i]) << i;
  // Two lanes merged by start, as the timeline's merges read them.
  size_t a = 0, b = 1129, a_end = 1000, b_end = rows.size() - 1;
  while (a < a_end || b < b_end) {
    const bool take_a = b == b_end || (a < a_end && rows[a].start <= rows[b].start);
    const size_t i = take_a ? a++ : b++;
    ASSERT_EQ(lanes[i], rows[i]) << i;
  }
  std::mt19937_64 rng(5);
  for (int k = 0; k < 20'000; ++k) {
    const size_t i = rng() % rows.size();
    ASSERT_EQ(lanes[i], rows[i]) << i;
  }
  for (size_t i = rows.size(); i-- > 0;) ASSERT_EQ(lanes[i], rows[i]) << i;
}

// Two stores read in turn share each thread's cache: neither may answer with the other's
// blocks, nor with what a store held before a lane was added.
TEST(PackedLanes, StoresNeverReadEachOthersCachedBlocks) {
  std::vector<Row> rows_a, rows_b;
  const Lanes a = Make({700, 300}, 1, &rows_a);
  Lanes b = Make({700, 300}, 2, &rows_b);
  for (size_t i = 0; i < rows_a.size(); ++i) {
    ASSERT_EQ(a[i], rows_a[i]);
    ASSERT_EQ(b[i], rows_b[i]);
  }
  std::vector<Row> more;
  Lanes extra = Make({50}, 9, &more);
  (void)extra;
  Lanes::Packed packed;
  for (const Row& r : more) packed.Append(RowCodec::Encode(r));
  b.AddLane(42, std::move(packed));
  for (const Row& r : more) rows_b.push_back({r.start, r.end, r.name, 42});
  for (size_t i = 0; i < rows_b.size(); ++i) ASSERT_EQ(b[i], rows_b[i]) << i;
  // A moved-from store is empty, and the store it moved to reads as before.
  Lanes moved = std::move(b);
  EXPECT_TRUE(b.empty());
  for (size_t i = 0; i < rows_b.size(); ++i) ASSERT_EQ(moved[i], rows_b[i]) << i;
}

// Filter keeps each lane's records in order: a lane whose kept records are one run (a time
// window's) reads them from the records it shares, starting mid-block; another lane's are
// packed again.
TEST(PackedLanes, FilteredStoresReadTheKeptRecords) {
  std::vector<Row> rows;
  const Lanes lanes = Make({1000, 0, 700, 300}, 8, &rows);
  const uint64_t from = rows[77].start, to = rows[900].start;  // a window of lane 10
  auto in_window = [&](size_t, const Row& r) { return r.start >= from && r.start < to; };
  auto every_third = [&](size_t i, const Row&) { return i % 3 == 0; };
  for (int which = 0; which < 2; ++which) {
    std::vector<Row> want;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (which == 0 ? in_window(i, rows[i]) : every_third(i, rows[i])) want.push_back(rows[i]);
    }
    const Lanes kept = which == 0 ? lanes.Filter(in_window) : lanes.Filter(every_third);
    ASSERT_EQ(kept.size(), want.size());
    ASSERT_EQ(kept.lanes(), 4u);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(kept[i], want[i]) << which << " " << i;
    for (size_t i = want.size(); i-- > 0;) ASSERT_EQ(kept[i], want[i]) << which << " " << i;
    // The lanes' index ranges follow one another.
    for (size_t k = 1; k < kept.lanes(); ++k) EXPECT_EQ(kept.lane_begin(k), kept.lane_end(k - 1));
    // The window's run shares its lane's packed records; the original store reads as before.
    if (which == 0) {
      EXPECT_EQ(kept.bytes(), lanes.bytes());
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(lanes[i], rows[i]) << i;
}

TEST(PackedLanes, ThreadsReadWithCachesOfTheirOwn) {
  std::vector<Row> rows;
  const Lanes lanes = Make({20'000, 3'000, 7'000}, 4, &rows);
  std::vector<std::thread> threads;
  std::vector<size_t> wrong(4, 0);
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (size_t k = 0; k < 50'000; ++k) {
        const size_t i = t % 2 ? rng() % rows.size() : (k * 7 + t) % rows.size();
        wrong[t] += !(lanes[i] == rows[i]);
      }
    });
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(wrong[t], 0u) << "thread " << t;
}

}  // namespace
}  // namespace tracesmith::analysis
