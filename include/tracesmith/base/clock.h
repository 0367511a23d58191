// Clocks for benchmarks and capture bookkeeping.
#pragma once

#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tracesmith {

// CPU time of the calling thread, in seconds. Benchmarks report throughput per
// thread CPU time ("events per second on one core"): unlike wall time it is not
// inflated by other processes competing for the machine.
inline double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Nanoseconds of a clock_gettime clock.
inline uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// A cheap, monotonic-enough tick counter for timing hot paths from inside
// them: the TSC on x86-64 (~7 ns, no serialization; invariant on every CPU
// the GPU machines use), CLOCK_MONOTONIC elsewhere. Convert with
// TickRate, calibrated against CLOCK_MONOTONIC over a known interval.
inline uint64_t CpuTicks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return ClockNs(CLOCK_MONOTONIC);
#endif
}

// Ticks -> nanoseconds from two (ticks, CLOCK_MONOTONIC ns) readings.
struct TickRate {
  uint64_t ticks0 = 0, ns0 = 0;
  static TickRate Start() { return TickRate{CpuTicks(), ClockNs(CLOCK_MONOTONIC)}; }
  // Nanoseconds per tick measured from Start() to now (1 when too short to tell).
  double NsPerTick() const {
    uint64_t dt = CpuTicks() - ticks0, dn = ClockNs(CLOCK_MONOTONIC) - ns0;
    return dt > 1000 && dn > 1000 ? double(dn) / double(dt) : 1.0;
  }
};

}  // namespace tracesmith
