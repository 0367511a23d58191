// CubinHash: a loaded module's identity (ModuleLoadEvent::cubin_hash), cheap
// enough for the module-load callback on the program's thread.
//
// The whole image up to 64 KiB; above that its size and 32 blocks of 2 KiB
// spread evenly from its first byte to its last (the ELF header and the
// section headers at the end included). Hashing every byte cost 0.3-1 ms per
// module on the loading thread (a PyTorch program loads ~65 MB of cubins; the
// hash is bound by memory at 5-10 GB/s), and 256 KiB sampled with four lanes
// still ~50 us, with module-load callbacks of 100-146 us in the Transformer
// step (H200, 2026-11-29): 64 KiB with eight lanes is ~8 us on the dev VM.
// Identical images always hash alike; two images of one size that differ only
// between the blocks do too. The hash only names a module within a trace
// (nothing recomputes it), so traces written with the older rule stay valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tracesmith::capture {

// A non-cryptographic 64-bit hash of bytes: eight independent lanes, so the
// multiply chains overlap (the chain's latency, not the multiplier, bounds one lane).
inline uint64_t HashBytes(const uint8_t* p, size_t n, uint64_t seed) {
  constexpr int kLanes = 8;
  uint64_t h[kLanes];
  for (int l = 0; l < kLanes; ++l) h[l] = (seed ^ n) + 0x9e3779b97f4a7c15ull * uint64_t(l + 1);
  auto step = [](uint64_t a, uint64_t v) {
    a = (a ^ v) * 0x100000001b3ull;
    return a ^ (a >> 29);
  };
  size_t i = 0;
  for (; i + 8 * kLanes <= n; i += 8 * kLanes) {
    uint64_t v[kLanes];
    std::memcpy(v, p + i, sizeof(v));
    for (int l = 0; l < kLanes; ++l) h[l] = step(h[l], v[l]);
  }
  for (; i < n; ++i) h[i % kLanes] = step(h[i % kLanes], p[i]);
  uint64_t r = h[0];
  for (int l = 1; l < kLanes; ++l) r = step(r * 0xff51afd7ed558ccdull, h[l]);
  return r;
}

inline constexpr size_t kCubinHashWhole = 64 << 10;
inline constexpr size_t kCubinHashBlock = 2 << 10;
inline constexpr size_t kCubinHashBlocks = 32;

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
