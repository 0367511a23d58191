// CubinHash: a loaded module's identity (ModuleLoadEvent::cubin_hash), cheap
// enough for the module-load callback on the program's thread.
//
// The whole image up to 256 KiB; above that its size and 64 blocks of 4 KiB
// spread evenly from its first byte to its last (the ELF header and the
// section headers at the end included). Hashing every byte cost 0.3-1 ms per
// module on the loading thread: a PyTorch program loads ~65 MB of cubins and
// the hash is bound by memory at 5-10 GB/s. Identical images always hash
// alike; two images of one size that differ only between the blocks do too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tracesmith::capture {

// A non-cryptographic 64-bit hash of bytes: four independent lanes, so the
// multiply chains overlap.
inline uint64_t HashBytes(const uint8_t* p, size_t n, uint64_t seed) {
  uint64_t h[4] = {seed ^ n, 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull};
  auto step = [](uint64_t a, uint64_t v) {
    a = (a ^ v) * 0x100000001b3ull;
    return a ^ (a >> 29);
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t v[4];
    std::memcpy(v, p + i, 32);
    for (int l = 0; l < 4; ++l) h[l] = step(h[l], v[l]);
  }
  for (; i < n; ++i) h[i & 3] = step(h[i & 3], p[i]);
  return step(step(step(h[0], h[1]) * 0xff51afd7ed558ccdull, h[2]), h[3]);
}

inline constexpr size_t kCubinHashWhole = 256 << 10;
inline constexpr size_t kCubinHashBlock = 4 << 10;
inline constexpr size_t kCubinHashBlocks = 64;

inline uint64_t CubinHash(const uint8_t* p, size_t n) {
  constexpr uint64_t kSeed = 0xcbf29ce484222325ull;
  if (n <= kCubinHashWhole) return HashBytes(p, n, kSeed);
  uint64_t h = kSeed ^ n;
  const size_t stride = (n - kCubinHashBlock) / (kCubinHashBlocks - 1);
  for (size_t b = 0; b < kCubinHashBlocks; ++b) {
    size_t at = b + 1 == kCubinHashBlocks ? n - kCubinHashBlock : stride * b;
    h = HashBytes(p + at, kCubinHashBlock, h);
  }
  return h;
}

}  // namespace tracesmith::capture
