// CubinHash: identical images hash alike; what it reads of a large one.
#include "capture/cubin_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace tracesmith::capture {
namespace {

std::vector<uint8_t> Image(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 131 + (i >> 9));
  return v;
}

uint64_t Hash(const std::vector<uint8_t>& v) { return CubinHash(v.data(), v.size()); }

TEST(CubinHash, SmallImagesAreHashedWhole) {
  auto a = Image(kCubinHashWhole);
  uint64_t h = Hash(a);
  EXPECT_EQ(Hash(Image(kCubinHashWhole)), h);
  for (size_t at : {size_t{0}, size_t{12345}, kCubinHashWhole - 1}) {
    auto b = a;
    b[at] ^= 1;
    EXPECT_NE(Hash(b), h) << at;
  }
  auto shorter = a;
  shorter.pop_back();
  EXPECT_NE(Hash(shorter), h);
  EXPECT_NE(Hash(Image(3)), Hash(Image(4)));
}

TEST(CubinHash, LargeImagesBySizeAndSampledBlocks) {
  const size_t n = 13 << 20;  // the largest cubin of the shipped transformer trace is 12.9 MB
  auto a = Image(n);
  uint64_t h = Hash(a);
  EXPECT_EQ(Hash(Image(n)), h);
  const size_t stride = (n - kCubinHashBlock) / (kCubinHashBlocks - 1);
  // The ELF header, a middle block, the section headers at the end.
  for (size_t at : {size_t{0}, stride * 30 + 100, n - 1}) {
    auto b = a;
    b[at] ^= 1;
    EXPECT_NE(Hash(b), h) << at;
  }
  EXPECT_NE(Hash(Image(n + 1)), h);
  // A byte between two blocks is not read: documented, and the reason it is cheap.
  auto between = a;
  between[kCubinHashBlock + 10] ^= 1;
  EXPECT_EQ(Hash(between), h);
}

}  // namespace
}  // namespace tracesmith::capture
