#include "tracesmith/timeline/packed_records.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <utility>

namespace tracesmith::analysis::packed {

namespace {

struct Choice {
  uint32_t width = 64;
  uint32_t exceptions = 0;
};

// How many of the kBlock offsets lie above `first`: four counts, so that the compares do not
// wait on one another.
static_assert(kBlock % 4 == 0);
uint32_t CountAbove(const uint64_t* offsets, uint64_t first) {
  uint32_t n[4] = {};
  for (size_t i = 0; i < kBlock; i += 4)
    for (size_t j = 0; j < 4; ++j) n[j] += offsets[i + j] > first;
  return n[0] + n[1] + n[2] + n[3];
}

// The width and number of exceptions that store `offsets` (from the block's base) in the
// fewest bits: k exceptions (64 bits each) leave the other offsets in slots of w bits below
// the k slots they take at the top. Widths are tried down from the widest while at most
// kMaxExceptions offsets lie above them: mostly one to three. Each counts the offsets above
// it in one pass (no histogram of widths first: its counts, kept in memory, wait on each
// other's stores, and a third of the fields are all one value).
Choice ChooseWidth(const uint64_t* offsets) {
  uint64_t all = 0;
  for (size_t i = 0; i < kBlock; ++i) all |= offsets[i];
  const uint32_t widest = uint32_t(std::bit_width(all));
  Choice best{widest, 0};
  uint64_t best_bits = uint64_t(kBlock) * widest;
  for (uint32_t w = widest; w-- > 1;) {
    const uint32_t above = CountAbove(offsets, MaxSlot(w));  // offsets wider than w
    if (above > kMaxExceptions) break;
    // The offsets in the top `k` slots of w bits are exceptions too: k grows until it
    // counts them all.
    uint32_t k = above;
    for (;;) {
      if (k > MaxSlot(w)) {  // more exceptions than slot values for them
        k = kMaxExceptions + 1;
        break;
      }
      const uint32_t n = CountAbove(offsets, MaxSlot(w) - k);
      if (n <= k) break;
      k = n;
    }
    if (k > kMaxExceptions) continue;
    const uint64_t bits = uint64_t(kBlock) * w + 64 * k;
    if (bits < best_bits) best_bits = bits, best = {w, k};
  }
  return best;
}

template <uint32_t W>
void Unpack(const uint64_t* words, uint64_t base, uint64_t* slots) {
  if constexpr (W == 0) {
    std::fill(slots, slots + kBlock, base);
  } else {
    // 64 slots take exactly W words: two groups, each unrolled so that every shift is a
    // constant.
    constexpr uint64_t mask = W == 64 ? ~uint64_t(0) : (uint64_t(1) << W) - 1;
    for (size_t g = 0; g < 2; ++g, words += W, slots += 64) {
#pragma GCC unroll 64
      for (size_t i = 0; i < 64; ++i) {
        const size_t bit = i * W, q = bit / 64, r = bit % 64;
        uint64_t v = words[q] >> r;
        if (r + W > 64) v |= words[q + 1] << (64 - r);
        slots[i] = base + (v & mask);
      }
    }
  }
}

template <size_t... W>
constexpr auto UnpackTable(std::index_sequence<W...>) {
  return std::array<void (*)(const uint64_t*, uint64_t, uint64_t*), sizeof...(W)>{
      &Unpack<uint32_t(W)>...};
}
constexpr auto kUnpack = UnpackTable(std::make_index_sequence<65>());

}  // namespace

void UnpackField(const uint64_t* words, const FieldCode& c, uint64_t* values) {
  const uint32_t width = c.width();
  kUnpack[width](words, c.base, values);
  const uint64_t step = c.linear() ? words[2 * width + c.exceptions] : 0;
  if (c.exceptions == 0) {
    if (step != 0)
      for (size_t i = 0; i < kBlock; ++i) values[i] += i * step;
    return;
  }
  const uint64_t top = MaxSlot(width), first = top - c.exceptions;
  for (size_t i = 0; i < kBlock; ++i) {
    const uint64_t slot = values[i] - c.base;
    values[i] = slot > first ? words[2 * width + (top - slot)] : values[i] + i * step;
  }
}

namespace {

// Offsets from the smallest of `values` - i * step (modulo 2^64: a line's residuals may lie
// either side of it); returns that smallest.
uint64_t Offsets(const uint64_t* values, uint64_t step, uint64_t* offsets) {
  const uint64_t r0 = values[0];
  int64_t lowest = 0;
  for (size_t i = 0; i < kBlock; ++i) lowest = std::min(lowest, int64_t(values[i] - i * step - r0));
  const uint64_t base = r0 + uint64_t(lowest);
  for (size_t i = 0; i < kBlock; ++i) offsets[i] = values[i] - i * step - base;
  return base;
}

}  // namespace

FieldCode PackField(const uint64_t* values, uint64_t* out) {
  const uint64_t base = *std::min_element(values, values + kBlock);
  uint64_t offsets[kBlock];
  for (size_t i = 0; i < kBlock; ++i) offsets[i] = values[i] - base;
  Choice c = ChooseWidth(offsets);
  uint64_t bits = uint64_t(kBlock) * c.width + 64 * c.exceptions;
  FieldCode code{base, uint8_t(c.width), 0};
  uint64_t step = 0;
  // From the line through the first and last values: worth its step's word when the values
  // advance steadily.
  if (const int64_t s = int64_t(values[kBlock - 1] - values[0]) / int64_t(kBlock - 1); s != 0) {
    uint64_t line[kBlock];
    const uint64_t line_base = Offsets(values, uint64_t(s), line);
    // Not chosen (half the packing time) when the line's offsets are as wide as the plain
    // slots and those needed no exceptions: outliers are all the line could still drop.
    const uint32_t widest = uint32_t(std::bit_width(*std::max_element(line, line + kBlock)));
    const Choice l = c.exceptions == 0 && widest >= c.width ? Choice{} : ChooseWidth(line);
    const uint64_t line_bits = uint64_t(kBlock) * l.width + 64 * l.exceptions + 64;
    if (line_bits < bits) {
      std::copy(line, line + kBlock, offsets);
      c = l, bits = line_bits, step = uint64_t(s);
      code = {line_base, uint8_t(l.width | kLinear), 0};
    }
  }
  const uint64_t top = MaxSlot(c.width);
  const uint32_t slot_words = 2 * c.width;  // kBlock * width / 64
  // The slots that do not fit become exceptions, numbered in index order: fewer than chosen
  // when some of the largest offsets equal the largest one kept in the slots.
  uint32_t k = 0;
  if (c.exceptions)
    for (size_t i = 0; i < kBlock; ++i)
      if (offsets[i] > top - c.exceptions) {
        out[slot_words + k] = values[i];
        offsets[i] = top - k++;
      }
  PutSlots(out, c.width, [&](size_t i) { return offsets[i]; });
  code.exceptions = uint8_t(k);
  if (code.linear()) out[slot_words + k] = step;
  return code;
}

uint64_t NextGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

uint32_t Pages::Take(uint32_t words) {
  if (list.empty() || used + words > size) {
    // Pages double up to kPageWords: a small trace's records stay small.
    size = std::min<uint32_t>(kPageWords, std::max<uint32_t>({2 * size, 256, words}));
    list.push_back(std::make_unique<uint64_t[]>(size));  // zeroed
    sizes.push_back(size);
    used = 0;
    bytes += size_t(size) * sizeof(uint64_t);
  }
  const uint32_t first = uint32_t(list.size() - 1) << kPageBits | used;
  used += words;
  words_used += words;
  return first;
}

void Pages::GiveBack(uint32_t word, uint32_t words) {
  const size_t page = word >> kPageBits;
  while (list.size() > page + 1) {  // pages after it: empty once it is given back
    bytes -= size_t(sizes.back()) * sizeof(uint64_t);
    list.pop_back();
    sizes.pop_back();
  }
  size = sizes.back();
  used = word & (kPageWords - 1);
  std::fill(list.back().get() + used, list.back().get() + used + words, 0);
  words_used -= words;
}

}  // namespace tracesmith::analysis::packed
