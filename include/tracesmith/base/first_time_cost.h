// FirstTimeWork: time spent on work that is done once per new thing (an
// unwind rule for a return address seen for the first time, a call stack
// interned for the first time), kept apart from the steady per-call cost.
//
// A capture's cost per launch mixes the two: a short program pays mostly for
// first sightings, a long training job almost only the steady cost. The
// capture-cost accounting (capture/capture_cost.h) subtracts the ticks
// this thread spent in first-time work during a timed call and reports the
// first-time work exactly on its own (it is rare, so every event is timed).
// Not nested: a FirstTimeWork inside another counts twice.
#pragma once

#include <atomic>
#include <cstdint>

#include "tracesmith/base/clock.h"

namespace tracesmith {

// The calling thread's first-time ticks so far.
inline thread_local uint64_t t_first_time_ticks = 0;
// All threads' first-time ticks and events since the process started.
inline std::atomic<uint64_t> g_first_time_ticks{0};
inline std::atomic<uint64_t> g_first_time_events{0};
// The longest single piece of first-time work.
inline std::atomic<uint64_t> g_first_time_max_ticks{0};
// The most first-time work inside one timed callback (its pieces added up:
// a new stack's rules and its interning), what the launching thread waited.
inline std::atomic<uint64_t> g_first_time_call_max_ticks{0};

inline void NoteFirstTimeInCall(uint64_t ticks) {
  uint64_t m = g_first_time_call_max_ticks.load(std::memory_order_relaxed);
  while (ticks > m &&
         !g_first_time_call_max_ticks.compare_exchange_weak(m, ticks, std::memory_order_relaxed)) {
  }
}

// Times one piece of first-time work, from construction to destruction.
class FirstTimeWork {
 public:
  FirstTimeWork() : t0_(CpuTicks()) {}
  ~FirstTimeWork() {
    uint64_t d = CpuTicks() - t0_;
    t_first_time_ticks += d;
    g_first_time_ticks.fetch_add(d, std::memory_order_relaxed);
    g_first_time_events.fetch_add(1, std::memory_order_relaxed);
    uint64_t m = g_first_time_max_ticks.load(std::memory_order_relaxed);
    while (d > m &&
           !g_first_time_max_ticks.compare_exchange_weak(m, d, std::memory_order_relaxed)) {
    }
  }
  FirstTimeWork(const FirstTimeWork&) = delete;
  FirstTimeWork& operator=(const FirstTimeWork&) = delete;

 private:
  uint64_t t0_;
};

}  // namespace tracesmith
