// SortedRowOrder: the row indices of an event array in (start, longest
// first, row index) order, for the TimeOrderer's views.
//
// Rows stored in launch order are nearly sorted by start: analysis's
// SortNearlySorted (sorter.h) sorts the keys by insertion in place when they
// are, else by one stable bucket pass on the high bits of the start (about 8
// keys per bucket) and an insertion sort inside each bucket; a bucket that a
// skewed trace made large is std::sort'ed instead, never worse than sorting
// everything.
//
// Keys are 8 bytes where they can be: (start - earliest start) above the row
// index in one integer, which fits while the starts span under 2^(64 - index
// bits) ns (4.8 hours for a million rows). Comparing and moving plain
// integers halves the memory traffic of 16-byte {start, index} keys, which a
// wider span still uses. Packed keys order equal starts by index; those runs
// (rare) are then re-sorted by end time.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "large_buffer.h"
#include "tracesmith/model/trace.h"
#include "tracesmith/timeline/sorter.h"

namespace tracesmith::exporter {
// `in` holds fewer than 2^32 rows; starts[i] is EventStart(in[i]) (used as
// scratch: overwritten) and [lo, hi] their range.
template <typename T>
void SortedRowOrder(const std::vector<T>& in, uint64_t* starts, uint64_t lo, uint64_t hi,
                    std::vector<uint32_t>* order) {
  using analysis::SortNearlySorted;
  const size_t n = in.size();
  order->resize(n);
  if (n == 0) return;
  auto longer_first = [&](uint64_t a, uint64_t b) {  // row indices with equal starts
    uint64_t ea = model::EventEnd(in[a]), eb = model::EventEnd(in[b]);
    return ea != eb ? ea > eb : a < b;
  };
  const int bucket_bits = std::min(20, static_cast<int>(std::bit_width(n / 8)));
  const int span_bits = static_cast<int>(std::bit_width(hi - lo));
  const int index_bits = static_cast<int>(std::bit_width(n - 1));
  const int shift = std::max(0, span_bits - bucket_bits);
  const size_t buckets = (size_t{1} << bucket_bits) + 1;

  if (span_bits + index_bits <= 64) {
    const uint64_t mask = (uint64_t{1} << index_bits) - 1;
    uint64_t* keys = starts;
    for (size_t i = 0; i < n; ++i) keys[i] = ((keys[i] - lo) << index_bits) | i;
    const int key_shift = std::min(63, index_bits + shift);  // 64 only when n < 8
    LargeBuffer<uint64_t> scratch(n);  // untouched (no pages) when insertion does
    uint64_t* sorted = SortNearlySorted(
        keys, n, scratch.get(), buckets, [&](uint64_t k) { return k >> key_shift; },
        [](uint64_t a, uint64_t b) { return a < b; });
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && (sorted[j] >> index_bits) == (sorted[i] >> index_bits)) ++j;
      if (j - i > 1)
        std::sort(sorted + i, sorted + j,
                  [&](uint64_t a, uint64_t b) { return longer_first(a & mask, b & mask); });
      for (; i < j; ++i) (*order)[i] = static_cast<uint32_t>(sorted[i] & mask);
    }
    return;
  }
  struct Key {
    uint64_t start;
    uint64_t index;  // 64-bit: 16-byte keys, no padding to copy around
  };
  LargeBuffer<Key> keys(n), scratch(n);
  for (size_t i = 0; i < n; ++i) keys[i] = {starts[i], i};
  const Key* sorted = SortNearlySorted(
      keys.get(), n, scratch.get(), buckets, [&](const Key& k) { return (k.start - lo) >> shift; },
      [&](const Key& a, const Key& b) {
        return a.start != b.start ? a.start < b.start : longer_first(a.index, b.index);
      });
  for (size_t i = 0; i < n; ++i) (*order)[i] = static_cast<uint32_t>(sorted[i].index);
}

// `in` holds fewer than 2^32 rows.
template <typename T>
void SortedRowOrder(const std::vector<T>& in, std::vector<uint32_t>* order) {
  const size_t n = in.size();
  LargeBuffer<uint64_t> starts(n);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t s = model::EventStart(in[i]);
    starts[i] = s;
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  SortedRowOrder(in, starts.get(), lo, hi, order);
}

}  // namespace tracesmith::exporter
