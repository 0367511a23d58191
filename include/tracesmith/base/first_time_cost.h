// FirstTimeWork: time spent on work that is done once per new thing (an
// unwind rule for a return address seen for the first time, a call stack
// interned for the first time), kept apart from the steady per-call cost.
//
// A capture's cost per launch mixes the two: a short program pays mostly for
// first sightings, a long training job almost only the steady cost. The
// capture-cost accounting (capture/capture_cost.h) subtracts the ticks
// this thread spent in first-time work during a timed call and reports the
// first-time work exactly on its own (it is rare, so every event is timed).
// Pieces may nest: an inner piece's time is its kind's, not the outer one's.
#pragma once

#include <atomic>
#include <cstdint>

#include "tracesmith/base/clock.h"

namespace tracesmith {

// What a piece of first-time work was, to tell where a slow first callback
// went (`info`: "in one callback at most ... of which ...").
enum class FirstTimeKind : uint8_t {
  kBounds = 0,  // a thread's stack bounds found or extended (stacks/unwinder.cc)
  kMemo,        // a thread's walk memo taken or mapped (stacks/walk_memo.cc)
  kRule,        // an unwind rule computed for a new return address
  kIntern,      // a new call stack interned (the collector's lock, frames, nodes)
  kRing,        // a thread's ring made (capture/thread_rings.h)
  kInternWait,  // of interning: waiting for the collector's lock (the writer may hold it)
  kDescribe,    // of interning: a new Python frame's function, file and line read
  kCopy,        // a walk handed to the writer: its stack copied and queued (stack_collector.h)
  kCount
};
inline constexpr const char* kFirstTimeKindNames[] = {"bounds", "memo",      "rule",     "intern",
                                                      "ring",   "lock_wait", "describe", "copy"};
static_assert(sizeof(kFirstTimeKindNames) / sizeof(kFirstTimeKindNames[0]) ==
              size_t(FirstTimeKind::kCount));
inline constexpr int kFirstTimeKinds = int(FirstTimeKind::kCount);

// The calling thread's first-time ticks so far, in all and by kind.
inline thread_local uint64_t t_first_time_ticks = 0;
inline thread_local uint64_t t_first_time_kind_ticks[kFirstTimeKinds] = {};
// What of t_first_time_kind_ticks the thread's last callback with first-time work had
// already counted (NoteFirstTimeInCall): the rest is the next one's.
inline thread_local uint64_t t_first_time_kind_mark[kFirstTimeKinds] = {};
// All threads' first-time ticks and events since the process started.
inline std::atomic<uint64_t> g_first_time_ticks{0};
inline std::atomic<uint64_t> g_first_time_events{0};
// The longest single piece of first-time work.
inline std::atomic<uint64_t> g_first_time_max_ticks{0};
// By kind: ticks, pieces, the longest piece.
inline std::atomic<uint64_t> g_first_time_kind_ticks[kFirstTimeKinds] = {};
inline std::atomic<uint64_t> g_first_time_kind_events[kFirstTimeKinds] = {};
inline std::atomic<uint64_t> g_first_time_kind_max[kFirstTimeKinds] = {};
// The most first-time work inside one timed callback (its pieces added up:
// a new stack's rules and its interning), what the launching thread waited;
// and that callback's ticks by kind (written by the thread that set the
// maximum: two threads setting it at once may mix their parts, a race the
// figures of a report can bear).
inline std::atomic<uint64_t> g_first_time_call_max_ticks{0};
inline std::atomic<uint64_t> g_first_time_call_max_kind[kFirstTimeKinds] = {};

inline void AtomicMax(std::atomic<uint64_t>& m, uint64_t v) {
  uint64_t cur = m.load(std::memory_order_relaxed);
  while (v > cur && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// Called at the end of a timed callback that did `ticks` of first-time work:
// its parts by kind are what the thread did since its last such callback
// (first-time work on a program's thread happens inside callbacks).
[[gnu::cold, gnu::noinline]] inline void NoteFirstTimeInCall(uint64_t ticks) {
  uint64_t parts[kFirstTimeKinds];
  for (int k = 0; k < kFirstTimeKinds; ++k) {
    parts[k] = t_first_time_kind_ticks[k] - t_first_time_kind_mark[k];
    t_first_time_kind_mark[k] = t_first_time_kind_ticks[k];
  }
  uint64_t m = g_first_time_call_max_ticks.load(std::memory_order_relaxed);
  while (ticks > m) {
    if (g_first_time_call_max_ticks.compare_exchange_weak(m, ticks, std::memory_order_relaxed)) {
      for (int k = 0; k < kFirstTimeKinds; ++k)
        g_first_time_call_max_kind[k].store(parts[k], std::memory_order_relaxed);
      break;
    }
  }
}

// Times one piece of first-time work, from construction to destruction. A
// piece inside another (a lock waited for while interning) is its own kind's
// and not the outer one's; the totals, the event count and the longest piece
// are the outermost pieces'.
class FirstTimeWork;
inline thread_local FirstTimeWork* t_first_time_open = nullptr;

class FirstTimeWork {
 public:
  explicit FirstTimeWork(FirstTimeKind kind)
      : t0_(CpuTicks()), kind_(int(kind)), parent_(t_first_time_open) {
    t_first_time_open = this;
  }
  ~FirstTimeWork() {
    const uint64_t d = CpuTicks() - t0_;
    const uint64_t own = d > inner_ ? d - inner_ : 0;
    t_first_time_open = parent_;
    t_first_time_kind_ticks[kind_] += own;
    g_first_time_kind_ticks[kind_].fetch_add(own, std::memory_order_relaxed);
    g_first_time_kind_events[kind_].fetch_add(1, std::memory_order_relaxed);
    AtomicMax(g_first_time_kind_max[kind_], own);
    if (parent_) {
      parent_->inner_ += d;
      return;
    }
    t_first_time_ticks += d;
    g_first_time_ticks.fetch_add(d, std::memory_order_relaxed);
    g_first_time_events.fetch_add(1, std::memory_order_relaxed);
    AtomicMax(g_first_time_max_ticks, d);
  }
  FirstTimeWork(const FirstTimeWork&) = delete;
  FirstTimeWork& operator=(const FirstTimeWork&) = delete;

 private:
  uint64_t t0_;
  int kind_;
  FirstTimeWork* parent_;
  uint64_t inner_ = 0;  // ticks of pieces inside this one
};

}  // namespace tracesmith
