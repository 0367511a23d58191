#include "tracesmith/base/bytes.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace tracesmith {
namespace {

TEST(BytesTest, VarintRoundTripAndSizes) {
  const uint64_t values[] = {
      0, 1, 127, 128, 300, 16383, 16384, 1ull << 32, std::numeric_limits<uint64_t>::max()};
  const size_t sizes[] = {1, 1, 1, 2, 2, 2, 3, 5, 10};
  for (size_t i = 0; i < std::size(values); ++i) {
    ByteWriter w;
    w.PutVarint(values[i]);
    EXPECT_EQ(w.size(), sizes[i]) << values[i];
    ByteCursor c(w.data(), w.size());
    uint64_t v;
    ASSERT_TRUE(c.ReadVarint(&v));
    EXPECT_EQ(v, values[i]);
    EXPECT_TRUE(c.empty());
  }
}

TEST(BytesTest, ZigZag) {
  EXPECT_EQ(ZigZagEncode(0), 0u);
  EXPECT_EQ(ZigZagEncode(-1), 1u);
  EXPECT_EQ(ZigZagEncode(1), 2u);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 1000; ++i) {
    auto v = static_cast<int64_t>(rng());
    EXPECT_EQ(ZigZagDecode(ZigZagEncode(v)), v);
  }
  EXPECT_EQ(ZigZagDecode(ZigZagEncode(std::numeric_limits<int64_t>::min())),
            std::numeric_limits<int64_t>::min());
}

TEST(BytesTest, CursorRefusesToReadPastEnd) {
  const uint8_t data[] = {0x80, 0x80};  // unterminated varint
  ByteCursor c(data, sizeof(data));
  uint64_t v;
  EXPECT_FALSE(c.ReadVarint(&v));
  ByteCursor c2(data, 1);
  uint32_t u32;
  EXPECT_FALSE(c2.ReadU32(&u32));
  std::string_view s;
  const uint8_t str[] = {5, 'a', 'b'};  // claims 5 bytes, has 2
  ByteCursor c3(str, sizeof(str));
  EXPECT_FALSE(c3.ReadString(&s));
}

TEST(BytesTest, OverlongVarintRejected) {
  uint8_t data[11];
  std::fill(std::begin(data), std::end(data), 0xff);
  data[10] = 0x01;
  ByteCursor c(data, sizeof(data));
  uint64_t v;
  EXPECT_FALSE(c.ReadVarint(&v));
}

}  // namespace
}  // namespace tracesmith
