// Time ordering and interval algebra for the analysis engine.
//
// WindowedSort: CUPTI delivers each stream's records almost in time order
// (per-buffer, per-kind), so a lane is put in order by insertion with a
// bounded look-back window: O(n * disorder) instead of O(n log n), and no
// extra memory. A record displaced by more than the window makes the whole
// range fall back to std::stable_sort, so the result is always sorted.
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

// Sorts [first, last) by `less`. Returns false when the window was exceeded
// and a full sort was needed.
template <typename It, typename Less>
bool WindowedSort(It first, It last, Less less) {
  for (It i = first + (first != last ? 1 : 0); i < last; ++i) {
    if (!less(*i, *(i - 1))) continue;
    auto value = std::move(*i);
    It j = i;
    size_t moved = 0;
    while (j > first && less(value, *(j - 1))) {
      if (++moved > kSortWindow) {
        *j = std::move(value);  // restore a permutation, then sort it all
        std::stable_sort(first, last, less);
        return false;
      }
      *j = std::move(*(j - 1));
      --j;
    }
    *j = std::move(value);
  }
  return true;
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
