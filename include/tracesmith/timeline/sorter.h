// Time ordering and interval algebra for the analysis engine (and the
// export's row order: one sorter for nearly-sorted data).
//
// CUPTI delivers each stream's records almost in time order (per-buffer,
// per-kind), so rows stored in arrival or launch order are nearly sorted:
//   BoundedInsertionSort: insertion, O(n + moves), in place; gives up when
//     one element moves more than a window or all moves pass a budget.
//   WindowedSort: that with a 4096-place window, else std::stable_sort: in
//     place, no extra memory (analysis's lanes, one stream each).
//   BucketSort: a stable scatter on the high bits of a numeric key, then
//     insertion inside each bucket, into a second array: O(n) whatever the
//     disorder.
//   SortNearlySorted: insertion first, within a budget of 2 moves per
//     element; past it, the bucket sort (the export's whole tables, all
//     streams interleaved: mostly sorted, sometimes far out).
// docs/benchmarks.md ("Sorting nearly-sorted rows") measures each on both
// shapes of input.
//
// MergeUnion: the union of several sorted interval lists (one per stream) as
// one sorted, disjoint list — a k-way merge with a small heap, the global
// time-order merge across streams, devices and processes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tracesmith::analysis {

// Displacement handled by insertion: covers one CUPTI buffer's reordering.
inline constexpr size_t kSortWindow = 4096;

// Sorts [first, last) by `less` by insertion while no element moves more
// than `window` places and the moves stay within `max_moves` in all. Returns
// false when either was exceeded: [first, last) then holds a permutation of
// the input, partly sorted.
template <typename It, typename Less>
bool BoundedInsertionSort(It first, It last, Less less, size_t window, size_t max_moves) {
  size_t moves = 0;
  for (It i = first + (first != last ? 1 : 0); i < last; ++i) {
    if (!less(*i, *(i - 1))) continue;
    auto value = std::move(*i);
    It j = i;
    size_t moved = 0;
    while (j > first && less(value, *(j - 1))) {
      if (++moved > window || ++moves > max_moves) {
        *j = std::move(value);  // restore a permutation
        return false;
      }
      *j = std::move(*(j - 1));
      --j;
    }
    *j = std::move(value);
  }
  return true;
}

// Sorts [first, last) by `less`. Returns false when the window was exceeded
// and a full sort was needed.
template <typename It, typename Less>
bool WindowedSort(It first, It last, Less less) {
  if (BoundedInsertionSort(first, last, less, kSortWindow, SIZE_MAX)) return true;
  std::stable_sort(first, last, less);
  return false;
}

// Sorts keys[0, n) into out[0, n): scatter by bucket_of (stable; values in
// [0, buckets)), then sort each bucket with less (insertion; std::sort for a
// bucket a skewed input made large).
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
    if (last - first > 256)
      std::sort(first, last, less);
    else
      BoundedInsertionSort(first, last, less, SIZE_MAX, SIZE_MAX);
    first = last;
  }
}

// Sorts keys[0, n) (whose order `less` makes total, so the result is the
// same whichever way it is reached): in place by insertion when that takes
// at most 2 moves per key, else by BucketSort into `scratch`. Returns the
// array that holds the result (`keys` or `scratch`).
template <typename Key, typename BucketOf, typename Less>
Key* SortNearlySorted(Key* keys, size_t n, Key* scratch, size_t buckets, BucketOf bucket_of,
                      Less less) {
  if (BoundedInsertionSort(keys, keys + n, less, kSortWindow, n)) return keys;
  BucketSort(keys, n, buckets, bucket_of, less, scratch);
  return scratch;
}

// A half-open time interval [start, end).
struct Interval {
  uint64_t start = 0, end = 0;
  uint64_t length() const { return end - start; }
  bool operator==(const Interval&) const = default;
};

// Appends [s, e) to a sorted, disjoint list, merging with the last interval
// when they touch or overlap. s must be >= the previous start.
inline void AppendUnion(std::vector<Interval>* out, uint64_t s, uint64_t e) {
  if (e <= s) return;
  if (!out->empty() && s <= out->back().end) {
    out->back().end = std::max(out->back().end, e);
  } else {
    out->push_back({s, e});
  }
}

// Union of lists that are each sorted by start (they may overlap each other
// and themselves).
std::vector<Interval> MergeUnion(std::span<const std::span<const Interval>> lists);

// Total length of the intersection of two sorted, disjoint lists.
uint64_t IntersectionLength(std::span<const Interval> a, std::span<const Interval> b);
// Total length of a disjoint list.
uint64_t TotalLength(std::span<const Interval> a);

// Largest number of intervals that overlap at one instant, across lists that
// are each sorted and disjoint (e.g. per-stream busy intervals).
uint32_t MaxOverlap(std::span<const std::span<const Interval>> lists);

// The same over lists read through cursors (done(), current() -> Interval,
// Next()), for lists computed as they are read. The boundaries of all lists
// are swept in time order; lists are few (streams of one device), so the next
// boundary is found by a linear scan. Ends come before starts at the same
// instant: intervals are half-open.
template <typename Cursor>
uint32_t MaxOverlapOf(std::vector<Cursor>& cursors) {
  std::vector<uint8_t> inside(cursors.size(), 0);
  uint32_t now = 0, best = 0;
  while (true) {
    size_t pick = SIZE_MAX;
    uint64_t pick_t = 0;
    bool pick_start = false;
    for (size_t k = 0; k < cursors.size(); ++k) {
      if (cursors[k].done()) continue;
      const bool start = !inside[k];
      const Interval c = cursors[k].current();
      const uint64_t t = start ? c.start : c.end;
      if (pick == SIZE_MAX || t < pick_t || (t == pick_t && !start && pick_start)) {
        pick = k;
        pick_t = t;
        pick_start = start;
      }
    }
    if (pick == SIZE_MAX) break;
    if (pick_start) {
      inside[pick] = 1;
      best = std::max(best, ++now);
    } else {
      inside[pick] = 0;
      --now;
      cursors[pick].Next();
    }
  }
  return best;
}

}  // namespace tracesmith::analysis
