// Pseudo-random bytes for replay payload tests (module images, memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tracesmith::testing {

inline std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed;
  for (auto& b : v) b = uint8_t((x = x * 1664525u + 1013904223u) >> 24);
  return v;
}

}  // namespace tracesmith::testing
