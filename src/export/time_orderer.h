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
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "event_sink.h"
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
  void AddView(const model::Trace& trace) {
    std::apply([&](auto&... q) { (AddView(q, trace), ...); }, queues_);
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
  // Rows live in `rows`, or (a view) in `view`/`view_size`.
  template <typename T>
  struct Queue {
    std::vector<T> rows;
    const T* view = nullptr;
    size_t view_size = 0;
    size_t head = 0;
    const T* data() const { return view ? view : rows.data(); }
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
  void AddView(Queue<T>& q, const model::Trace& trace) {
    const auto& in = trace.Rows<T>();
    if (in.empty()) return;
    if (!std::is_sorted(in.begin(), in.end(), Before<T>)) return AddRows(q, trace);
    q.view = in.data();
    q.view_size = in.size();
    q.head = 0;
    buffered_ += in.size();
  }

  template <typename T>
  void AddRows(Queue<T>& q, const model::Trace& batch) {
    const auto& in = batch.Rows<T>();
    if (in.empty()) return;
    if (q.view != nullptr) {  // a view becomes owned rows before it can grow
      q.rows.assign(q.view + q.head, q.view + q.view_size);
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

  // Pops the globally earliest event while its start < watermark and more
  // than `keep` events are buffered.
  void ReleaseUntil(uint64_t watermark, uint64_t keep) {
    while (buffered_ > keep) {
      uint64_t best_start = std::numeric_limits<uint64_t>::max();
      uint64_t best_end = 0;
      uint8_t best_rank = 255;
      int best = -1;
      int index = 0;
      std::apply(
          [&](auto&... q) {
            (Consider(q, index++, &best, &best_start, &best_end, &best_rank), ...);
          },
          queues_);
      if (best < 0 || best_start >= watermark) return;
      // Drain the chosen queue while it stays ahead of every other queue's
      // head: the common case (one kind dominating a stretch of time) then
      // costs one comparison per event instead of a scan over all kinds.
      index = 0;
      std::apply([&](auto&... q) { (Drain(q, index++, best, watermark, keep), ...); }, queues_);
    }
  }

  template <typename T>
  void Consider(const Queue<T>& q, int index, int* best, uint64_t* best_start, uint64_t* best_end,
                uint8_t* best_rank) {
    if (q.head >= q.size()) return;
    const T& e = q.data()[q.head];
    uint64_t s = Start(e), en = model::EventEnd(e);
    if (s < *best_start ||
        (s == *best_start && (en > *best_end || (en == *best_end && Rank<T>() < *best_rank)))) {
      *best = index;
      *best_start = s;
      *best_end = en;
      *best_rank = Rank<T>();
    }
  }

  template <typename T>
  void Drain(Queue<T>& q, int index, int chosen, uint64_t watermark, uint64_t keep) {
    if (index != chosen) return;
    // The earliest start among the other queues bounds how far we may go.
    uint64_t limit = watermark;
    int i = 0;
    std::apply(
        [&](auto&... other) {
          ((i++ != chosen && other.head < other.size()
                ? (void)(limit = std::min(limit, Start(other.data()[other.head])))
                : (void)0),
           ...);
        },
        queues_);
    // Always emit the chosen head (it is the global minimum), then continue
    // while strictly before every other head.
    bool first = true;
    const T* rows = q.data();
    const size_t n = q.size();
    while (q.head < n && buffered_ > keep) {
      const T& e = rows[q.head];
      if (!first && Start(e) >= limit) break;
      first = false;
      sink_->On(e);
      ++q.head;
      --buffered_;
    }
    if (q.head == n) {
      q.rows.clear();
      q.view = nullptr;
      q.view_size = 0;
      q.head = 0;
    }
  }

  EventSink* sink_;
  uint64_t max_buffered_;
  uint64_t buffered_ = 0;
  std::tuple<Queue<model::KernelEvent>, Queue<model::MemcpyEvent>, Queue<model::MemsetEvent>,
             Queue<model::SyncEvent>, Queue<model::ApiEvent>, Queue<model::NvtxRangeEvent>,
             Queue<model::NvtxMarkerEvent>, Queue<model::MemoryEvent>, Queue<model::CounterEvent>,
             Queue<model::ModuleLoadEvent>, Queue<model::GraphLaunchEvent>,
             Queue<model::OverheadEvent>, Queue<model::DropEvent>>
      queues_;
};

}  // namespace tracesmith::exporter
