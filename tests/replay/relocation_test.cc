#include "tracesmith/replay/relocation.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace tracesmith::replay {
namespace {

std::vector<uint8_t> Words(std::initializer_list<uint64_t> words) {
  std::vector<uint8_t> b(words.size() * 8);
  size_t i = 0;
  for (uint64_t w : words) std::memcpy(b.data() + 8 * i++, &w, 8);
  return b;
}
uint64_t Word(const std::vector<uint8_t>& b, size_t i) {
  uint64_t w;
  std::memcpy(&w, b.data() + 8 * i, 8);
  return w;
}

TEST(Relocation, TranslatesInsideMovedRangesOnly) {
  Relocation r;
  r.Add(0x7f0000200000, 0x200000, 0x7e0000000000);
  r.Add(0x7f0000000000, 0x100000, 0x7d0000000000);
  EXPECT_EQ(r.ranges_moved(), 2u);
  EXPECT_EQ(r.Translate(0x7f0000000000), 0x7d0000000000u);
  EXPECT_EQ(r.Translate(0x7f00000fffff), 0x7d00000fffffu);
  EXPECT_EQ(r.Translate(0x7f0000100000), 0x7f0000100000u);  // gap between ranges
  EXPECT_EQ(r.Translate(0x7f0000200010), 0x7e0000000010u);
  EXPECT_EQ(r.Translate(0x7f0000400000), 0x7f0000400000u);  // one past the end
  EXPECT_EQ(r.Translate(42), 42u);
}

TEST(Relocation, PatchesAlignedPointerWordsAndCounts) {
  Relocation r;
  r.Add(0x7f0000000000, 0x1000, 0x500000000000);
  auto b = Words({0x7f0000000010, 123, 0x7f0000001000, 0x7f0000000ff8});
  EXPECT_EQ(r.PatchWords(b, 0x7f0000000000), 2u);
  EXPECT_EQ(Word(b, 0), 0x500000000010u);
  EXPECT_EQ(Word(b, 1), 123u);
  EXPECT_EQ(Word(b, 2), 0x7f0000001000u);
  EXPECT_EQ(Word(b, 3), 0x500000000ff8u);
}

TEST(Relocation, RespectsAlignmentOfTheBufferAddress) {
  Relocation r;
  r.Add(0x1000, 0x100, 0x9000);
  // The buffer starts 4 bytes before an 8-byte boundary: word 0 is bytes 4..11.
  std::vector<uint8_t> b(20, 0);
  uint64_t p = 0x1010;
  std::memcpy(b.data() + 4, &p, 8);
  EXPECT_EQ(r.PatchWords(b, 0x2004), 1u);
  std::memcpy(&p, b.data() + 4, 8);
  EXPECT_EQ(p, 0x9010u);
  Relocation none;
  EXPECT_EQ(none.PatchWords(b, 0), 0u);
}

}  // namespace
}  // namespace tracesmith::replay
