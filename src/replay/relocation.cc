#include "tracesmith/replay/relocation.h"

#include <algorithm>
#include <cstring>

namespace tracesmith::replay {

void Relocation::Add(uint64_t from, uint64_t size, uint64_t to) {
  if (size == 0) return;
  Move m{from, size, to};
  auto at = std::lower_bound(moves_.begin(), moves_.end(), m,
                             [](const Move& a, const Move& b) { return a.from < b.from; });
  moves_.insert(at, m);
}

uint64_t Relocation::Translate(uint64_t v) const {
  // The last move starting at or below v.
  auto it = std::upper_bound(moves_.begin(), moves_.end(), v,
                             [](uint64_t x, const Move& m) { return x < m.from; });
  if (it == moves_.begin()) return v;
  --it;
  return v - it->from < it->size ? it->to + (v - it->from) : v;
}

uint64_t Relocation::PatchWords(std::span<uint8_t> bytes, uint64_t address) const {
  if (moves_.empty()) return 0;
  uint64_t patched = 0;
  size_t first = static_cast<size_t>((8 - address % 8) % 8);
  for (size_t i = first; i + 8 <= bytes.size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + i, 8);
    uint64_t t = Translate(v);
    if (t != v) {
      std::memcpy(bytes.data() + i, &t, 8);
      ++patched;
    }
  }
  return patched;
}

}  // namespace tracesmith::replay
