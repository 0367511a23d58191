// LaneBuilder: a lane packed as it arrives comes out in WindowedSort's order (the stable
// order by (start, end)), and is `displaced` exactly when WindowedSort falls back to a
// stable sort of the whole lane.
#include "tracesmith/timeline/lane_builder.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace tracesmith::analysis {
namespace {

struct Row {
  uint64_t start = 0, end = 0;
  uint32_t id = 0;  // arrival order: ties must keep it
  bool operator==(const Row&) const = default;
};
struct RowCodec {
  using Record = Row;
  static constexpr size_t kFields = 3;
  static std::array<uint64_t, 3> Encode(const Row& r) { return {r.start, r.end - r.start, r.id}; }
  static Row Decode(const std::array<uint64_t, 3>& f, uint32_t) {
    return {f[0], f[0] + f[1], uint32_t(f[2])};
  }
};
struct ByTime {
  bool operator()(const Row& a, const Row& b) const {
    return a.start < b.start || (a.start == b.start && a.end < b.end);
  }
};

// Returns whether the builder had to sort the lane whole (unordered).
bool ExpectAsWindowedSort(const std::vector<Row>& arrival) {
  LaneBuilder<RowCodec, ByTime> b;
  for (const Row& r : arrival) b.Add(r);
  EXPECT_EQ(b.size(), arrival.size());
  const bool displaced = b.displaced(), unordered = b.unordered();
  const PackedRecords<3> packed = b.Finish();
  std::vector<Row> want = arrival;
  const bool in_window = WindowedSort(want.begin(), want.end(), ByTime());
  EXPECT_EQ(displaced, !in_window);
  EXPECT_EQ(packed.size(), want.size());
  for (size_t i = 0; i < want.size() && i < packed.size(); ++i)
    if (RowCodec::Decode(packed.Get(i), 0) != want[i]) {
      ADD_FAILURE() << "records differ from WindowedSort's first at " << i;
      break;
    }
  return unordered;
}

std::vector<Row> Rising(size_t n, uint64_t seed, uint64_t jitter) {
  std::mt19937_64 rng(seed);
  std::vector<Row> rows;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t start = 1'000'000 + i * 1'000 + (jitter ? rng() % jitter : 0);
    rows.push_back({start, start + rng() % 3 * 100, uint32_t(i)});
  }
  return rows;
}

TEST(LaneBuilder, InOrderAndLocallyShuffledLanesComeOutInOrder) {
  ExpectAsWindowedSort({});
  ExpectAsWindowedSort(Rising(1, 1, 0));
  ExpectAsWindowedSort(Rising(20'000, 1, 0));
  ExpectAsWindowedSort(Rising(20'000, 2, 50'000));     // within ~50 places
  ExpectAsWindowedSort(Rising(20'000, 3, 4'000'000));  // ~4000 places: near the window
}

TEST(LaneBuilder, TiesKeepTheirArrivalOrder) {
  std::vector<Row> rows;
  for (uint32_t i = 0; i < 10'000; ++i) rows.push_back({1'000 + (i / 300) * 10, 1'005, i});
  ExpectAsWindowedSort(rows);
}

// A file's batches hold each table's rows apart: a stream's memcpys come after the batch's
// kernels though they ran among them (the early ones wait apart, merged when packed). With
// ties between the two kinds, between early ones, and batches that reach past the window.
TEST(LaneBuilder, RowsOfALaterTableMergedInOrder) {
  std::mt19937_64 rng(9);
  for (size_t batch : {size_t(100), size_t(3'000), size_t(6'000)}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    std::vector<Row> rows;
    uint32_t id = 0;
    for (size_t b = 0; b < 8; ++b) {
      std::vector<Row> later;
      for (size_t i = 0; i < batch; ++i) {
        const uint64_t t = 1'000'000 + (b * batch + i) * 100;
        Row r{t - t % 300, t - t % 300 + rng() % 2 * 50, 0};  // many equal times
        (rng() % 10 == 0 ? later : rows).push_back(r);
      }
      for (Row& r : later) rows.push_back(r);
    }
    for (Row& r : rows) r.id = id++;
    // Rows later than what waits (batches of 6,000) take packed blocks back: no sort of the
    // whole lane.
    EXPECT_FALSE(ExpectAsWindowedSort(rows));
  }
}

// A record far out of place: past the window WindowedSort sorts the whole lane (displaced);
// past what waits the builder takes packed blocks back to put it in its place, up to 2^18
// records waiting; past that the lane is sorted whole at Finish (unordered).
TEST(LaneBuilder, FarDisplacedRecordsMakeTheLaneSortedWhole) {
  for (size_t far : {size_t(4'097), size_t(4'200), size_t(5'000), size_t(15'000), size_t(200'000),
                     size_t(300'000)}) {
    SCOPED_TRACE("moved back " + std::to_string(far));
    std::vector<Row> rows = Rising(far + 20'000, 4, 0);
    std::swap(rows[10'000].start, rows[10'000 + far].start);  // one early, one late
    for (Row& r : rows) r.end = r.start + 10;
    EXPECT_EQ(ExpectAsWindowedSort(rows), far > (size_t(1) << 18));
  }
  std::vector<Row> reversed = Rising(9'000, 5, 0);
  std::reverse(reversed.begin(), reversed.end());
  ExpectAsWindowedSort(reversed);
  ExpectAsWindowedSort(Rising(20'000, 6, 1'000'000'000));  // shuffled
}

}  // namespace
}  // namespace tracesmith::analysis

namespace tracesmith::analysis {
namespace {

// Rows later than 2^18 waiting records allow (a table whose chunk comes millions of rows
// behind) wait apart and are merged in at Finish: equal times with packed rows and with
// each other keep their arrival order.
TEST(LaneBuilder, RowsPastWhatCanWaitMergedAtFinish) {
  std::mt19937_64 rng(12);
  std::vector<Row> rows;
  for (uint64_t i = 0; i < 400'000; ++i) {
    const uint64_t t = 1'000'000 + i * 100;
    rows.push_back({t - t % 300, t - t % 300 + rng() % 2 * 50, 0});
  }
  for (size_t i = 0; i < 3'000; ++i) {  // late: times among the first 100,000 rows
    const uint64_t t = 1'000'000 + (rng() % 100'000) * 100;
    rows.push_back({t - t % 300, t - t % 300 + rng() % 2 * 50, 0});
  }
  for (uint32_t i = 0; i < rows.size(); ++i) rows[i].id = i;
  EXPECT_TRUE(ExpectAsWindowedSort(rows));
}

}  // namespace
}  // namespace tracesmith::analysis
