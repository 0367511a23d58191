// PackedRecords: every field reads back as appended, by index and by block, whatever its
// distribution; outliers become exceptions instead of widening every slot.
#include "tracesmith/timeline/packed_records.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace tracesmith::analysis {
namespace {

using PackedColumn = PackedRecords<1>;

void ExpectSame(const std::vector<uint64_t>& values, const PackedColumn& c) {
  ASSERT_EQ(c.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(c.Get(i)[0], values[i]) << "index " << i;
  uint64_t block[1][PackedColumn::kBlock];
  size_t at = 0;
  for (size_t b = 0; b < c.blocks(); ++b) {
    const size_t n = c.DecodeColumns(b, block);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(block[0][i], values[at + i]) << "block " << b;
    at += n;
  }
  EXPECT_EQ(at, values.size());
}

PackedColumn Pack(const std::vector<uint64_t>& values) {
  PackedColumn c;
  for (uint64_t v : values) c.Append({v});
  return c;
}

TEST(PackedColumn, EveryDistributionReadsBackAsAppended) {
  std::mt19937_64 rng(7);
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (size_t n : {size_t(0), size_t(1), size_t(127), size_t(128), size_t(129), size_t(1000),
                   size_t(4096 + 17)}) {
    std::vector<std::vector<uint64_t>> cases(11);
    uint64_t t = 1'700'000'000'000'000'000ull, down = 500'000, wrap = 300;
    for (size_t i = 0; i < n; ++i) {
      cases[0].push_back(42);                                     // all equal: width 0
      cases[1].push_back(rng());                                  // full 64 bits
      cases[2].push_back(t += 1000 + rng() % 50'000);             // rising times
      cases[3].push_back(rng() % 97 ? rng() % 300 : rng());       // small, and outliers
      cases[4].push_back(i % 2 ? kMax : 0);                       // both ends
      cases[5].push_back(kMax - rng() % 5);                       // near the top
      cases[6].push_back(rng() % 7 == 0 ? 1000 + rng() % 8 : 0);  // sparse
      cases[7].push_back(uint64_t(1) << (rng() % 64));            // every width
      cases[8].push_back(down -= 900 + rng() % 200);              // falling: a negative step
      cases[9].push_back(wrap -= 1000 + rng() % 3);               // falling through 0 to 2^64
      cases[10].push_back(i % 128 == 9 ? rng() : t += 8);         // a line and an outlier
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      SCOPED_TRACE("n " + std::to_string(n) + " case " + std::to_string(k));
      ExpectSame(cases[k], Pack(cases[k]));
    }
  }
}

TEST(PackedColumn, ReadableWhileItGrows) {
  PackedColumn c;
  std::vector<uint64_t> values;
  for (uint64_t i = 0; i < 300; ++i) {
    c.Append({i * i});
    values.push_back(i * i);
    ASSERT_EQ(c.Get(i)[0], i * i);
    ASSERT_EQ(c.Get(i / 2)[0], values[i / 2]);
  }
  ExpectSame(values, c);
}

// A few large values in a block of small ones are stored whole: 128 values under 2^8 and 3
// of 2^60 take 8 bits a slot and three words, not 61 bits a slot.
TEST(PackedColumn, OutliersAreStoredApartInsteadOfWideningTheBlock) {
  std::vector<uint64_t> values;
  for (size_t b = 0; b < 1000; ++b)
    for (size_t i = 0; i < PackedColumn::kBlock; ++i)
      values.push_back(i == 5 || i == 70 || i == 71 ? (uint64_t(1) << 60) + i : (b * i * 37) % 200);
  const PackedColumn c = Pack(values);
  ExpectSame(values, c);
  // Per block: 16 words of slots, 3 of exceptions and a 16-byte header: 168 bytes.
  const double per_value = double(c.bytes()) / double(values.size());
  EXPECT_LT(per_value, 1.35);
  EXPECT_GT(per_value, 1.3);
}

// The width a field is packed in is the one of fewest bits (slots plus 64 an exception), as a
// search of every width and exception count finds it: widths with a single far outlier, a
// few near the top of a width, many spread, rising. The first and last values are equal, so
// that no line is tried and the plain packing alone is compared.
TEST(PackedColumn, WidthChosenIsTheOneOfFewestBits) {
  constexpr size_t kBlock = PackedColumn::kBlock;
  auto fewest_bits = [](const uint64_t* values) {
    const uint64_t base = *std::min_element(values, values + kBlock);
    uint64_t best = UINT64_MAX;
    for (uint32_t w = 0; w <= 64; ++w)
      for (uint32_t k = 0; k <= packed::kMaxExceptions && k <= packed::MaxSlot(w); ++k) {
        size_t above = 0;  // offsets in the top k slots or past them: exceptions
        for (size_t i = 0; i < kBlock; ++i) above += values[i] - base > packed::MaxSlot(w) - k;
        if (above <= k) {
          best = std::min<uint64_t>(best, uint64_t(kBlock) * w + 64 * k);
          break;
        }
      }
    return best;
  };
  std::mt19937_64 rng(11);
  for (int round = 0; round < 4000; ++round) {
    uint64_t values[kBlock];
    const uint32_t small = uint32_t(rng() % 20), wide = small + 1 + uint32_t(rng() % 43);
    const size_t outliers = rng() % 24;
    for (size_t i = 0; i < kBlock; ++i) {
      switch (round % 4) {
        case 0:
          values[i] = rng() % (uint64_t(1) << small);
          break;
        case 1:
          values[i] = (uint64_t(1) << small) - 1 - rng() % 20;
          break;  // near the top
        case 2:
          values[i] = i * (1 + rng() % 1000);
          break;
        default:
          values[i] = rng() >> (64 - wide);
          break;
      }
      if (i % 7 == 3 && i / 7 < outliers) values[i] = (uint64_t(1) << (wide - 1)) + rng() % 3;
    }
    values[kBlock - 1] = values[0];
    uint64_t out[packed::kMaxFieldWords] = {};
    const packed::FieldCode code = packed::PackField(values, out);
    ASSERT_FALSE(code.linear());
    // PackField may store fewer exceptions than it chose (ties at the top): still a valid
    // choice, so never fewer bits than the fewest, nor more.
    const uint64_t bits = uint64_t(kBlock) * code.width() + 64 * code.exceptions;
    ASSERT_EQ(bits, fewest_bits(values)) << "round " << round;
    uint64_t back[kBlock];
    packed::UnpackField(out, code, back);
    for (size_t i = 0; i < kBlock; ++i) ASSERT_EQ(back[i], values[i]) << "round " << round;
  }
}

TEST(PackedColumn, RisingTimesTakeTheBitsOfABlocksSpan) {
  // Kernels 20 us apart: a block spans ~2.6 ms, 22 bits a slot (with the header, under 3
  // bytes a value instead of 8).
  std::vector<uint64_t> values;
  uint64_t t = 1'700'000'000'000'000'000ull;
  for (size_t i = 0; i < 100'000; ++i) values.push_back(t += 20'000 + i % 7);
  const PackedColumn c = Pack(values);
  ExpectSame(values, c);
  EXPECT_LT(double(c.bytes()) / double(values.size()), 3.0);
}

// Values that advance steadily are stored from a line through the block's first and last:
// correlation ids 8 apart (a thread launching onto 8 streams) take no bits a slot, only the
// header and the step's word (24 bytes a block, not 10-bit slots); launch times 7 us apart
// give or take 100 ns take the bits of their drift from the line, not of the block's span.
TEST(PackedColumn, SteadyValuesAreStoredFromALine) {
  std::mt19937_64 rng(5);
  std::vector<uint64_t> ids, times;
  uint64_t t = 1'700'000'000'000'000'000ull;
  for (size_t i = 0; i < 100 * PackedColumn::kBlock; ++i) {
    ids.push_back(1'000'000 + 8 * i);
    times.push_back(t += 7'000 - 100 + rng() % 200);
  }
  const PackedColumn c = Pack(ids), d = Pack(times);
  ExpectSame(ids, c);
  ExpectSame(times, d);
  EXPECT_LT(double(c.bytes() - sizeof(uint64_t[128])) / double(ids.size()), 0.2);
  // The span of a block is ~890 us (20 bits); the drift from the line under 2^12 ns.
  EXPECT_LT(double(d.bytes() - sizeof(uint64_t[128])) / double(times.size()), 1.8);
}

TEST(PackedColumn, ClearDropsEverything) {
  PackedColumn c = Pack(std::vector<uint64_t>(1000, 9));
  c.Clear();
  EXPECT_EQ(c.size(), 0u);
  c.Append({5});
  EXPECT_EQ(c.Get(0)[0], 5u);
}

// Fields of one record are packed each in its own width, and read back together, one by one
// or a block at a time.
TEST(PackedRecords, FieldsOfARecordKeepTheirOwnWidths) {
  std::mt19937_64 rng(11);
  using Three = PackedRecords<3>;
  Three r;
  std::vector<Three::Record> rows;
  uint64_t t = 1'000'000'000;
  for (size_t i = 0; i < 10'000 + 77; ++i) {
    rows.push_back({t += 5'000 + rng() % 100, rng() % 50, i % 1000 == 3 ? ~uint64_t(0) : 7});
    r.Append(rows.back());
  }
  ASSERT_EQ(r.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(r.Get(i), rows[i]) << i;
    for (size_t f = 0; f < 3; ++f) ASSERT_EQ(r.Get(i)[f], rows[i][f]) << i << " field " << f;
  }
  uint64_t block[3][Three::kBlock];
  size_t at = 0;
  for (size_t b = 0; b < r.blocks(); ++b) {
    const size_t n = r.DecodeColumns(b, block);
    for (size_t i = 0; i < n; ++i)
      for (size_t f = 0; f < 3; ++f) ASSERT_EQ(block[f][i], rows[at + i][f]) << i << " " << f;
    at += n;
  }
  EXPECT_EQ(at, rows.size());
  // 17-bit times, 6-bit values, a constant with a rare outlier, a 40-byte header: ~3.4 bytes
  // a record instead of 24.
  EXPECT_LT(double(r.bytes()) / double(rows.size()), 4.0);
}

}  // namespace
}  // namespace tracesmith::analysis

namespace tracesmith::analysis {
namespace {

// Outliers in a block of one-bit values: a 1-bit slot has room for one exception at most
// (its top value), so the block widens rather than hand out slots it does not have.
TEST(PackedColumn, ManyOutliersInANarrowBlockWidenIt) {
  std::vector<uint64_t> values;
  for (size_t i = 0; i < 4 * PackedColumn::kBlock; ++i)
    values.push_back(i % 13 == 0 ? (uint64_t(1) << 40) + i : i % 2);
  ExpectSame(values, Pack(values));
}

}  // namespace
}  // namespace tracesmith::analysis

namespace tracesmith::analysis {
namespace {

// The last records taken back (LaneBuilder puts a late record in its place so), whole blocks
// and the unfilled one, over pages (small ones first), then more appended: every record reads
// back as the reference holds it, and the popped ones come out in order.
TEST(PackedRecords, TailTakenBackAndAppendedAgain) {
  PackedRecords<3> p;
  std::vector<std::array<uint64_t, 3>> ref;
  std::mt19937_64 rng(13);
  for (int round = 0; round < 120; ++round) {
    const size_t add = 1 + rng() % 3'000;
    for (size_t i = 0; i < add; ++i) {
      const std::array<uint64_t, 3> r{ref.size() * 7, rng() % 13, rng() % (uint64_t(1) << 40)};
      p.Append(r);
      ref.push_back(r);
    }
    std::vector<std::array<uint64_t, 3>> back;
    p.PopTail(rng() % 700, &back);
    ASSERT_LE(back.size(), ref.size());
    for (size_t k = 0; k < back.size(); ++k)
      ASSERT_EQ(back[k], ref[ref.size() - back.size() + k]) << "round " << round;
    ref.resize(ref.size() - back.size());
    ASSERT_EQ(p.size(), ref.size());
    ASSERT_EQ(p.size() % PackedRecords<3>::kBlock, 0u);  // whole blocks went back
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(p.Get(i), ref[i]) << "round " << round;
  }
  std::vector<std::array<uint64_t, 3>> all;
  p.PopTail(p.size() + 1, &all);
  EXPECT_EQ(all, ref);
  EXPECT_TRUE(p.empty());
}

}  // namespace
}  // namespace tracesmith::analysis
