#include "tracesmith/timeline/sorter.h"

#include <queue>

namespace tracesmith::analysis {

std::vector<Interval> MergeUnion(std::span<const std::span<const Interval>> lists) {
  std::vector<Interval> out;
  size_t total = 0;
  for (auto l : lists) total += l.size();
  out.reserve(total);
  if (lists.size() == 1) {
    // One list sorted by start: a single pass (a list may overlap itself).
    for (const Interval& i : lists[0]) AppendUnion(&out, i.start, i.end);
    return out;
  }
  // (start, list) min-heap over the lists' next intervals.
  using Head = std::pair<uint64_t, uint32_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heap;
  std::vector<size_t> pos(lists.size(), 0);
  for (uint32_t k = 0; k < lists.size(); ++k)
    if (!lists[k].empty()) heap.push({lists[k][0].start, k});
  while (!heap.empty()) {
    uint32_t k = heap.top().second;
    heap.pop();
    const Interval& i = lists[k][pos[k]++];
    AppendUnion(&out, i.start, i.end);
    if (pos[k] < lists[k].size()) heap.push({lists[k][pos[k]].start, k});
  }
  return out;
}

uint64_t IntersectionLength(std::span<const Interval> a, std::span<const Interval> b) {
  uint64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint64_t s = std::max(a[i].start, b[j].start);
    uint64_t e = std::min(a[i].end, b[j].end);
    if (e > s) total += e - s;
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

uint64_t TotalLength(std::span<const Interval> a) {
  uint64_t total = 0;
  for (const Interval& i : a) total += i.length();
  return total;
}

uint32_t MaxOverlap(std::span<const std::span<const Interval>> lists) {
  struct ListCursor {
    std::span<const Interval> list;
    size_t pos = 0;
    bool done() const { return pos >= list.size(); }
    const Interval& current() const { return list[pos]; }
    void Next() { ++pos; }
  };
  std::vector<ListCursor> cursors;
  cursors.reserve(lists.size());
  for (std::span<const Interval> l : lists) cursors.push_back(ListCursor{l});
  return MaxOverlapOf(cursors);
}

}  // namespace tracesmith::analysis
