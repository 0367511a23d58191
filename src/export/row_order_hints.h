// RowOrderHints: what the export's first pass learned about each event
// kind's rows, so that the TimeOrderer need not read them again: whether
// they are already in its order (start, longest first) and, when they are
// not, every row's start and their range, which SortedRowOrder needs.
//
// A million kernels are 136 MB of rows and a million launch calls 64 MB;
// the in-order check and the sort's gathering of starts each read all of
// them again (5-8% of an export), right after the first pass read them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "large_buffer.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::exporter {

struct RowOrderHint {
  bool sorted = true;
  uint64_t lo = UINT64_MAX, hi = 0;               // range of the starts
  std::unique_ptr<LargeBuffer<uint64_t>> starts;  // per row; only when not sorted
};

// One hint per event kind of one trace.
class RowOrderHints {
 public:
  template <typename T>
  RowOrderHint& For() {
    return by_kind_[static_cast<size_t>(model::RecordTraits<T>::kKind)];
  }

 private:
  std::array<RowOrderHint, size_t{model::kMaxEventTableKind} + 1> by_kind_;
};

// Calls visit(row) (returning the row's start) for every row, in order,
// and fills *hint. Rows are checked for order until the first one out of
// order; only from there are starts kept, the ones before it gathered
// again (a sorted kind, the common case, writes nothing).
template <typename T, typename Visit>
void ScanRowOrder(const std::vector<T>& rows, RowOrderHint* hint, Visit&& visit) {
  const size_t n = rows.size();
  uint64_t lo = UINT64_MAX, hi = 0, prev_start = 0, prev_end = UINT64_MAX;
  size_t i = 0;
  for (; i < n; ++i) {
    const uint64_t s = visit(rows[i]), e = model::EventEnd(rows[i]);
    lo = std::min(lo, s);
    hi = std::max(hi, s);
    const bool in_order = s > prev_start || (s == prev_start && e <= prev_end);
    prev_start = s;
    prev_end = e;
    if (!in_order) [[unlikely]]
      break;
  }
  hint->sorted = i >= n;
  hint->starts.reset();
  if (i < n) {
    hint->starts = std::make_unique<LargeBuffer<uint64_t>>(n);
    uint64_t* starts = hint->starts->get();
    for (size_t j = 0; j <= i; ++j) starts[j] = model::EventStart(rows[j]);
    for (++i; i < n; ++i) {
      const uint64_t s = visit(rows[i]);
      starts[i] = s;
      lo = std::min(lo, s);
      hi = std::max(hi, s);
    }
  }
  hint->lo = lo;
  hint->hi = hi;
}

}  // namespace tracesmith::exporter
