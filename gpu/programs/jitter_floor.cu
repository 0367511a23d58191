// The machine's own tail, without CUDA or a profiler: N busy sections of a
// fixed length (about W ns, what a captured launch's callback costs the
// program's thread), each timed with the steady clock. Prints how many took
// 100 us or more and the longest, so that gpu/stall_check.py can show the
// launch callbacks' tail beside the tail a thread doing nothing of
// TraceSmith's sees on the same machine in the same run (issue #41 item 2).
// Each section of 100 us or more is classed as TRACESMITH_SLOW_CALL_PROBE
// classes a slow callback (src/capture/capture_cost.cc: preempted, blocked,
// faulted, interrupted, unexplained), from the thread's usage read outside the
// timed span: what this machine does to a thread doing nothing of TraceSmith's.
// Usage: jitter_floor [N=2000000] [W=2000]
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

volatile unsigned long g_sink = 0;

__attribute__((noinline)) void Spin(long k) {
  unsigned long x = 0;
  for (long i = 0; i < k; ++i) x += static_cast<unsigned long>(i) * 2654435761u;
  g_sink = x;
}

struct Usage {
  long nvcsw, nivcsw, minflt, majflt;
  long long cpu_ns;
};

Usage ReadUsage() {
  rusage r{};
  getrusage(RUSAGE_THREAD, &r);
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return {r.ru_nvcsw, r.ru_nivcsw, r.ru_minflt, r.ru_majflt,
          static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec};
}

long long NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2000000;
  const long work_ns = argc > 2 ? std::atol(argv[2]) : 2000;
  // Calibrate: spin iterations per work_ns, from the fastest of 20 timed tries.
  const long probe = 1000000;
  long long best = 1LL << 62;
  for (int t = 0; t < 20; ++t) {
    const long long t0 = NowNs();
    Spin(probe);
    const long long d = NowNs() - t0;
    if (d < best) best = d;
  }
  const long k = best > 0 ? static_cast<long>(double(probe) * double(work_ns) / double(best)) : 1;
  long long max_ns = 0, total_ns = 0;
  long over = 0;
  long classes[5] = {0, 0, 0, 0, 0};  // preempted, blocked, faulted, interrupted, unexplained
  for (long i = 0; i < n; ++i) {
    const Usage u0 = ReadUsage();
    const long long t0 = NowNs();
    Spin(k);
    const long long d = NowNs() - t0;
    total_ns += d;
    if (d > max_ns) max_ns = d;
    if (d >= 100000) {
      ++over;
      const Usage u1 = ReadUsage();
      int c = 4;
      if (u1.nivcsw != u0.nivcsw)
        c = 0;
      else if (u1.nvcsw != u0.nvcsw)
        c = 1;
      else if (u1.minflt != u0.minflt || u1.majflt != u0.majflt)
        c = 2;
      else if (u1.cpu_ns - u0.cpu_ns < d / 2)
        c = 3;
      ++classes[c];
    }
  }
  std::printf(
      "jitter_floor: sections=%ld mean_ns=%.0f max_us=%.1f over_100us=%ld preempted=%ld "
      "blocked=%ld faulted=%ld interrupted=%ld unexplained=%ld\n",
      n, n ? double(total_ns) / double(n) : 0.0, double(max_ns) / 1e3, over, classes[0], classes[1],
      classes[2], classes[3], classes[4]);
  return 0;
}
