#include "tracesmith/base/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace tracesmith {
namespace {

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 B.4 test vectors.
  EXPECT_EQ(Crc32c("123456789", 9), 0xe3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
  std::string ones(32, '\xff');
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62a8ab43u);
}

TEST(Crc32cTest, IncrementalEqualsWhole) {
  std::string s = "The quick brown fox jumps over the lazy dog, repeatedly and at length.";
  uint32_t whole = Crc32c(s.data(), s.size());
  for (size_t split = 0; split <= s.size(); ++split) {
    uint32_t c = Crc32c(s.data(), split);
    c = Crc32c(s.data() + split, s.size() - split, c);
    EXPECT_EQ(c, whole) << split;
  }
}

}  // namespace
}  // namespace tracesmith
