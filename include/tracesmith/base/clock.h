// Clocks for benchmarks and capture bookkeeping.
#pragma once

#include <time.h>

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

// Median of a set of timings (upper median for an even count).
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace tracesmith
