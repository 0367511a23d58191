// TimeOrderer: restores start-time order across record kinds.
//
// An SBT file stores each kind in its own chunks, and a rare kind's chunk
// is written only when it fills, so file order is not time order. The
// orderer keeps one sorted queue per kind and releases events, merged by
// start time, up to a watermark: the earliest start any unread chunk can
// still contain (from the chunk index). A cap bounds memory when the
// watermark lags; exporters keep their output valid for late events anyway
// (they go to an extra track rather than breaking nesting).
//
// Ties: a longer event first (it encloses the shorter), and NVTX ranges
// before API calls before GPU work, so enclosing slices open first.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "event_sink.h"
#include "row_order_hints.h"
#include "sorted_order.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::exporter {

class TimeOrderer {
 public:
  explicit TimeOrderer(EventSink* sink, uint64_t max_buffered)
      : sink_(sink), max_buffered_(max_buffered) {}

  // Copies the event rows of `batch` into the queues.
  void Add(const model::Trace& batch) {
    std::apply([&](auto&... q) { (AddRows(q, batch), ...); }, queues_);
  }
  // Uses the rows of `trace` in place (no copy) where a kind is already
  // sorted; `trace` must outlive the release. Call once, on empty queues.
  // With `hints` (the first pass's, over `trace`), rows are not read again
  // to find their order; the hints' starts are used up.
  void AddView(const model::Trace& trace, RowOrderHints* hints = nullptr) {
    std::apply([&](auto&... q) { (AddView(q, trace, hints), ...); }, queues_);
  }
  // Releases every event starting before `watermark`, in order; then, if more
  // than max_buffered remain, the oldest until half that remains.
  void Release(uint64_t watermark) {
    ReleaseUntil(watermark, 0);
    if (buffered_ > max_buffered_)
      ReleaseUntil(std::numeric_limits<uint64_t>::max(), max_buffered_ / 2);
  }
  void ReleaseAll() { ReleaseUntil(std::numeric_limits<uint64_t>::max(), 0); }
  uint64_t buffered() const { return buffered_; }

 private:
  // Rows live in `rows`, or (a view) in `view`/`view_size`, visited in
  // `order` when the view is not sorted (sorting row indices, not 100+ byte
  // rows, keeps a million-kernel view cheap).
  template <typename T>
  struct Queue {
    std::vector<T> rows;
    const T* view = nullptr;
    size_t view_size = 0;
    std::vector<uint32_t> order;
    size_t head = 0;
    const T& at(size_t i) const {
      if (view == nullptr) return rows[i];
      return order.empty() ? view[i] : view[order[i]];
    }
    size_t size() const { return view ? view_size : rows.size(); }
  };
  template <typename T>
  static uint64_t Start(const T& e) {
    return model::EventStart(e);
  }
  // Rank for equal starts: enclosing kinds first.
  template <typename T>
  static constexpr uint8_t Rank() {
    if constexpr (std::is_same_v<T, model::NvtxRangeEvent>)
      return 0;
    else if constexpr (std::is_same_v<T, model::ApiEvent>)
      return 1;
    else if constexpr (std::is_same_v<T, model::GraphLaunchEvent>)
      return 2;
    else
      return 3;
  }
  template <typename T>
  static bool Before(const T& a, const T& b) {
    uint64_t sa = Start(a), sb = Start(b);
    if (sa != sb) return sa < sb;
    return model::EventEnd(a) > model::EventEnd(b);
  }

  template <typename T>
  void AddView(Queue<T>& q, const model::Trace& trace, RowOrderHints* hints) {
    const auto& in = trace.Rows<T>();
    if (in.empty()) return;
    if (in.size() >= UINT32_MAX) return AddRows(q, trace);
    q.view = in.data();
    q.view_size = in.size();
    q.head = 0;
    q.order.clear();
    if (hints != nullptr) {
      RowOrderHint& hint = hints->For<T>();
      if (!hint.sorted) SortedRowOrder(in, hint.starts->get(), hint.lo, hint.hi, &q.order);
      hint.starts.reset();
    } else if (!std::is_sorted(in.begin(), in.end(), Before<T>)) {
      SortedRowOrder(in, &q.order);
    }
    buffered_ += in.size();
  }

  template <typename T>
  void AddRows(Queue<T>& q, const model::Trace& batch) {
    const auto& in = batch.Rows<T>();
    if (in.empty()) return;
    if (q.view != nullptr) {  // a view becomes owned rows before it can grow
      std::vector<T> rest;
      rest.reserve(q.view_size - q.head);
      for (size_t i = q.head; i < q.view_size; ++i) rest.push_back(q.at(i));
      q.rows = std::move(rest);
      q.order.clear();
      q.view = nullptr;
      q.view_size = 0;
      q.head = 0;
    }
    if (q.head > 0) {
      q.rows.erase(q.rows.begin(), q.rows.begin() + static_cast<std::ptrdiff_t>(q.head));
      q.head = 0;
    }
    size_t old = q.rows.size();
    q.rows.insert(q.rows.end(), in.begin(), in.end());
    auto mid = q.rows.begin() + static_cast<std::ptrdiff_t>(old);
    if (!std::is_sorted(mid, q.rows.end(), Before<T>))
      std::stable_sort(mid, q.rows.end(), Before<T>);
    if (old > 0 && Before(*mid, *(mid - 1)))
      std::inplace_merge(q.rows.begin(), mid, q.rows.end(), Before<T>);
    buffered_ += in.size();
  }

  // Each queue's head, for a quick scan (start = max when empty).
  struct Head {
    uint64_t start = UINT64_MAX, neg_end = 0;
    uint8_t rank = 255;
  };
  static bool Less(const Head& a, const Head& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.neg_end != b.neg_end) return a.neg_end < b.neg_end;
    return a.rank < b.rank;
  }
  // One queue per event type (model/records.h's EventTypes), in its order.
  static constexpr size_t kKinds = model::EventTypes::kSize;
  static_assert(kKinds <= 32, "active_ has one bit per queue");
  static constexpr size_t kPrefetchAhead = 8;
  template <size_t I>
  void RefreshHead() {
    auto& q = std::get<I>(queues_);
    using T = std::decay_t<decltype(q.at(0))>;
    if (q.head < q.size()) {
      const T& e = q.at(q.head);
      heads_[I] = {Start(e), ~model::EventEnd(e), Rank<T>()};
      active_ |= 1u << I;
    } else {
      heads_[I] = Head{};
      active_ &= ~(1u << I);
    }
  }
  void RefreshAll() {
    [&]<size_t... I>(std::index_sequence<I...>) { (RefreshHead<I>(), ...); }
    (std::make_index_sequence<kKinds>{});
  }

  // Pops the globally earliest event while its start < watermark and more
  // than `keep` events are buffered. The chosen queue is drained while it
  // stays strictly ahead of every other queue's head: the common case (one
  // kind dominating a stretch of time) costs one comparison per event.
  //
  // Most traces alternate between two kinds (launch calls and kernels), so
  // a full scan finds the two earliest queues and the earliest start of all
  // the others ("rest"); events are then taken from those two, which only
  // needs their two heads compared, until one of the others could be next.
  // Each scan drains at least its earliest queue, so ties always progress.
  void ReleaseUntil(uint64_t watermark, uint64_t keep) {
    RefreshAll();
    static const std::array<DrainFn, kKinds> kDrain =
        MakeDrains(std::make_index_sequence<kKinds>{});
    while (buffered_ > keep) {
      size_t a = kKinds, b = kKinds;  // kKinds: the empty sentinel head
      uint64_t rest = UINT64_MAX;
      for (uint32_t bits = active_; bits != 0; bits &= bits - 1) {  // non-empty queues
        const size_t i = static_cast<size_t>(std::countr_zero(bits));
        if (a == kKinds || Less(heads_[i], heads_[a])) {
          rest = std::min(rest, heads_[b].start);
          b = a;
          a = i;
        } else if (b == kKinds || Less(heads_[i], heads_[b])) {
          rest = std::min(rest, heads_[b].start);
          b = i;
        } else {
          rest = std::min(rest, heads_[i].start);
        }
      }
      // a is the earliest of all: drained as a one-at-a-time scan would.
      if (a == kKinds || heads_[a].start >= watermark) return;
      kDrain[a](this, std::min({watermark, heads_[b].start, rest}), buffered_ - keep);
      while (buffered_ > keep) {
        const bool b_first = Less(heads_[b], heads_[a]);
        const size_t best = b_first ? b : a, other = b_first ? a : b;
        const uint64_t start = heads_[best].start;
        if (start >= rest) break;  // one of the others may come first (or tie): rescan
        if (start >= watermark) return;
        kDrain[best](this, std::min({watermark, heads_[other].start, rest}), buffered_ - keep);
      }
    }
  }

  // Emits the head of queue I (the global minimum), then its next events
  // while they start before `limit`, at most `budget` in all.
  template <size_t I>
  static void DrainAt(TimeOrderer* self, uint64_t limit, uint64_t budget) {
    auto& q = std::get<I>(self->queues_);
    const auto* rows = q.view != nullptr ? q.view : q.rows.data();
    const size_t n = q.size();
    const size_t first = q.head;
    const size_t stop = first + static_cast<size_t>(std::min<uint64_t>(budget, n - first));
    EventSink* const sink = self->sink_;
    size_t head = first;
    if (q.order.empty()) {
      do {
        sink->On(rows[head]);
      } while (++head < stop && Start(rows[head]) < limit);
    } else {
      // Visiting rows through `order` jumps between them: fetch a few rows
      // ahead so the sink does not wait on memory (rows span 1-3 lines).
      const uint32_t* order = q.order.data();
      do {
        if (head + kPrefetchAhead < n) {
          const char* ahead = reinterpret_cast<const char*>(rows + order[head + kPrefetchAhead]);
          for (size_t b = 0; b < sizeof(rows[0]); b += 64) __builtin_prefetch(ahead + b);
        }
        sink->On(rows[order[head]]);
      } while (++head < stop && Start(rows[order[head]]) < limit);
    }
    self->buffered_ -= head - first;
    q.head = head;
    if (head == n) {
      q.rows.clear();
      q.view = nullptr;
      q.view_size = 0;
      q.order.clear();
      q.head = 0;
    }
    self->template RefreshHead<I>();
  }
  using DrainFn = void (*)(TimeOrderer*, uint64_t, uint64_t);
  template <size_t... I>
  static constexpr std::array<DrainFn, kKinds> MakeDrains(std::index_sequence<I...>) {
    return {&DrainAt<I>...};
  }

  EventSink* sink_;
  uint64_t max_buffered_;
  uint64_t buffered_ = 0;
  model::ApplyEach<std::tuple, Queue, model::EventTypes> queues_;
  std::array<Head, kKinds + 1> heads_{};  // [kKinds]: always empty
  uint32_t active_ = 0;                   // bit i: queue i has a head
};

}  // namespace tracesmith::exporter
