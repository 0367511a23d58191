// SortedRowOrder: the row indices of an event array in (start, longest
// first, row index) order, for the TimeOrderer's views.
//
// Rows stored in launch order are nearly sorted by start, so one stable
// bucket pass on the high bits of the start (about 8 keys per bucket) and an
// insertion sort inside each bucket, O(n + inversions), do the work; a bucket
// that a skewed trace made large is std::sort'ed instead, never worse than
// sorting everything.
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

namespace tracesmith::exporter {
namespace sorted_order_internal {

// Sorts keys[0, n) into out[0, n): scatter by bucket_of (stable), then sort
// each bucket with less.
template <typename Key, typename BucketOf, typename Less>
void BucketSort(const Key* keys, size_t n, size_t buckets, BucketOf bucket_of, Less less,
                Key* out) {
  std::vector<uint32_t> next(buckets + 1);
  for (size_t i = 0; i < n; ++i) ++next[bucket_of(keys[i]) + 1];
  for (size_t b = 1; b <= buckets; ++b) next[b] += next[b - 1];
  for (size_t i = 0; i < n; ++i) out[next[bucket_of(keys[i])]++] = keys[i];
  // next[b] is now the end of bucket b.
  Key* first = out;
  for (size_t b = 0; b < buckets; ++b) {
    Key* last = out + next[b];
    if (last - first > 256) {
      std::sort(first, last, less);
    } else {
      for (Key* i = first + 1; i < last; ++i) {
        if (!less(*i, *(i - 1))) continue;
        Key k = *i;
        Key* j = i;
        do {
          *j = *(j - 1);
          --j;
        } while (j > first && less(k, *(j - 1)));
        *j = k;
      }
    }
    first = last;
  }
}

}  // namespace sorted_order_internal

// `in` holds fewer than 2^32 rows; starts[i] is EventStart(in[i]) (used as
// scratch: overwritten) and [lo, hi] their range.
template <typename T>
void SortedRowOrder(const std::vector<T>& in, uint64_t* starts, uint64_t lo, uint64_t hi,
                    std::vector<uint32_t>* order) {
  using sorted_order_internal::BucketSort;
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
    LargeBuffer<uint64_t> sorted(n);
    BucketSort(
        keys, n, buckets, [&](uint64_t k) { return k >> key_shift; },
        [](uint64_t a, uint64_t b) { return a < b; }, sorted.get());
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && (sorted[j] >> index_bits) == (sorted[i] >> index_bits)) ++j;
      if (j - i > 1)
        std::sort(sorted.get() + i, sorted.get() + j,
                  [&](uint64_t a, uint64_t b) { return longer_first(a & mask, b & mask); });
      for (; i < j; ++i) (*order)[i] = static_cast<uint32_t>(sorted[i] & mask);
    }
    return;
  }
  struct Key {
    uint64_t start;
    uint64_t index;  // 64-bit: 16-byte keys, no padding to copy around
  };
  LargeBuffer<Key> keys(n), sorted(n);
  for (size_t i = 0; i < n; ++i) keys[i] = {starts[i], i};
  BucketSort(
      keys.get(), n, buckets, [&](const Key& k) { return (k.start - lo) >> shift; },
      [&](const Key& a, const Key& b) {
        return a.start != b.start ? a.start < b.start : longer_first(a.index, b.index);
      },
      sorted.get());
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
