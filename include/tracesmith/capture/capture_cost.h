// The capture cost, measured inside the program: what the capture costs the profiled
// program (analysis/capture_cost.h reads the capture.cost.* stats written from it; the
// tests keep the suite name SelfCost).
//
// Every call at a callback site is timed with the TSC at entry and exit, so
// its total, its histogram and its maximum are exact: a millisecond stall in
// one call in a million is seen (issue #41 item 2). One call in kSampleEvery
// (chosen per thread by a xorshift draw, so periodic launch patterns do not
// alias) also has the stack capture inside it split into native unwind,
// Python walk and dedup (up to four more reads); the parts' totals are
// estimated as sampled time x calls / sampled calls. Per-thread counters are
// written only by their thread (relaxed atomic stores, no RMW, no lock) and
// summed by the writer at the end. The hot-path cost of the accounting: one
// TLS load, a xorshift, two TSC reads, a histogram increment and a maximum
// per call: ~30 ns per callback on the 2-core dev VM (`tracesmith benchmark
// stacks`, 2026-11-29; ~5 ns when one call in 8 was timed).
//
// Each timed call also lands in its site's histogram of quarter-octave
// buckets (CostBucket), so the summary can tell a typical call (median)
// from a tail of rare slow ones (a page first touched, the thread
// preempted, a cold rule lookup): the mean alone cannot.
//
// The slow-call probe (TRACESMITH_SLOW_CALL_PROBE=1, a diagnostic, issue #41
// item 2): every timed call also reads its thread's resource usage at entry
// and, when it took 100 us or more, again at exit, and the slow call is
// classed by what happened to the thread meanwhile: preempted (an involuntary
// context switch: another thread ran on its CPU), blocked (a voluntary one: it
// waited, on a lock or I/O), page faults (minor or major), interrupted (none
// of those, and the thread's own CPU time grew by less than half the call's:
// the kernel accounted the rest to interrupts or to the hypervisor's steal —
// time the thread did not run at all), or none of these ("unexplained": the
// thread was charged for the time: TraceSmith's, CUPTI's or the driver's
// work — or interrupts and steal on a kernel built without
// CONFIG_IRQ_TIME_ACCOUNTING / CONFIG_PARAVIRT_TIME_ACCOUNTING, which charges
// them to the running thread).
// The reads (getrusage and the thread's CPU clock, ~0.5 us together) sit
// outside the call's timed span.
//
// The writer thread's own time is CPU time per phase (CLOCK_THREAD_CPUTIME_ID),
// kept by the writer in WriterCost.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/base/clock.h"
#include "tracesmith/base/first_time_cost.h"

namespace tracesmith::capture {

enum class CostSite : uint8_t {
  // Callback sites on the program's threads (disjoint; their sum is the total).
  kLaunch = 0,  // driver API entry of a kernel launch (stack and ring push included)
  kCopy,        // ... of a memcpy
  kMemset,      // ... of a memset
  kGraph,       // ... of a graph launch
  kSync,        // synchronization calls, entry and exit (timestamps, ids, stack)
  kOther,       // module loads, contexts, NVTX and profiler-range callbacks
  kBuffer,      // CUPTI buffer requests and completions
  kDriverRow,   // exit of a work-submitting driver call (driver-launch rows)
  kAlloc,       // allocation/free driver calls (stack at entry; VMM/IPC rows at exit)
  // Parts of the sites above (not added to the total again).
  // Parts after kStack are timed in the same sampled calls as kStack and
  // share its call count.
  kStack,        // host stack capture, all of it
  kStackUnwind,  // ... native unwind
  kStackPython,  // ... Python frame walk
  kStackRewalk,  // diagnostic (TRACESMITH_STACK_REWALK=1): the same walk again at once
  kStackCopy,    // diagnostic (TRACESMITH_STACK_COPYPROBE=1): a copy of the stack the walk spans
  kCount
};
inline constexpr int kCostSites = int(CostSite::kCount);
inline constexpr int kFirstPartSite = int(CostSite::kStack);
// Stat name stem of a site: "launch", "copy", ..., "stack.unwind".
const char* CostSiteName(CostSite site);

// Histogram buckets of a timed call's ticks: 0..3 exact, then four per
// power of two (bucket 4*m + q holds [(4+q) << (m-2), (5+q) << (m-2))),
// the last one open-ended (2^32 ticks and more, over a second).
inline constexpr int kCostBuckets = 128;
inline int CostBucket(uint64_t ticks) {
  if (ticks < 4) return int(ticks);
  int m = 63 - __builtin_clzll(ticks);
  int b = 4 * m + int((ticks >> (m - 2)) & 3);
  return b < kCostBuckets ? b : kCostBuckets - 1;
}
// The first tick count of bucket b (b in 0..3 or 8..kCostBuckets).
inline uint64_t CostBucketStart(int b) {
  return b < 8 ? uint64_t(b < 4 ? b : 4) : uint64_t(4 + (b & 3)) << (b / 4 - 2);
}

// A thread's resource usage, as the slow-call probe reads it.
struct ThreadUsage {
  long nvcsw = 0, nivcsw = 0, minflt = 0, majflt = 0;
  uint64_t cpu_ns = 0;        // CLOCK_THREAD_CPUTIME_ID
  static ThreadUsage Read();  // getrusage(RUSAGE_THREAD) and the thread's CPU clock
};
// How a slow call's thread fared (stat names: capture.cost.<site>.slow_<name>).
// (kNone keeps its stat name "unexplained"; kInterrupted came later, last.)
enum class SlowClass : uint8_t { kPreempted = 0, kBlocked, kFaulted, kNone, kInterrupted, kCount };
inline constexpr int kSlowClasses = int(SlowClass::kCount);
const char* SlowClassName(SlowClass c);
// Set before a capture starts (CuptiEngine::Start), read on every timed call.
struct SlowCallProbe {
  // Relaxed atomics: read on every callback of every thread, written by Enable.
  static inline std::atomic<bool> on{false};
  static inline std::atomic<uint64_t> min_ticks{~uint64_t(0)};  // 100 us in ticks
  static inline std::atomic<double> ns_per_tick{0};
  static bool On() { return on.load(std::memory_order_relaxed); }
  // Turns the probe on with 100 us measured in ticks (a 2 ms calibration), or off.
  static void Enable(bool enable);
};

// The per-thread counters.
struct ThreadCost {
  static constexpr uint32_t kSampleEvery = 8;
  std::atomic<uint64_t> calls[kCostSites] = {};
  std::atomic<uint64_t> sampled[kCostSites] = {};
  std::atomic<uint64_t> ticks[kCostSites] = {};
  std::atomic<uint64_t> frames_native{0}, frames_python{0};  // in sampled stacks
  std::atomic<uint64_t> copy_bytes{0};                       // in timed kStackCopy samples
  // Timed calls by CostBucket (64-bit: every call is timed, and a thread
  // launching 400k kernels a second would wrap 32 bits in ~3 hours).
  std::atomic<uint64_t> hist[kCostSites][kCostBuckets] = {};
  std::atomic<uint64_t> max_ticks[kCostSites] = {};           // the slowest timed call
  std::atomic<uint64_t> slow[kCostSites][kSlowClasses] = {};  // the slow-call probe's classes
  uint32_t rng = 0x9e3779b9u;

  // The calling thread's counters (registered on first use).
  static ThreadCost* Get() {
    ThreadCost* t = t_cost;
    return __builtin_expect(t != nullptr, 1) ? t : Register();
  }
  // Counts one call at `site`; true when this call is to be timed.
  bool Count(CostSite site) {
    Bump(calls[int(site)], 1);
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng % kSampleEvery == 0;
  }
  // A timed part of a counted call.
  void AddSample(CostSite site, uint64_t t) {
    Bump(sampled[int(site)], 1);
    Bump(ticks[int(site)], t);
    std::atomic<uint64_t>& h = hist[int(site)][CostBucket(t)];
    h.store(h.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic<uint64_t>& m = max_ticks[int(site)];
    if (t > m.load(std::memory_order_relaxed)) m.store(t, std::memory_order_relaxed);
  }
  // The slow-call probe: classes a slow call of `ticks` by its thread's usage since
  // `at_entry`.
  void ClassifySlow(CostSite site, const ThreadUsage& at_entry, uint64_t ticks);
  static void Bump(std::atomic<uint64_t>& a, uint64_t by) {
    a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

 private:
  static thread_local ThreadCost* t_cost;
  static ThreadCost* Register();
};

// Ticks the calling thread spent in diagnostics that are not the capture's
// own cost (TRACESMITH_STACK_REWALK's second walk, the stack copy probe):
// left out of every site's figure, as first-time work is.
inline thread_local uint64_t t_diagnostic_ticks = 0;

// Timing of one counted call at `site`: ticks at construction, added on
// Finish less the first-time work done meanwhile (base/first_time_cost.h:
// reported exactly on its own) and diagnostics. Every call is timed; `on`
// (one call in kSampleEvery) says whether its parts are timed too. With the
// slow-call probe on, the usage read at entry comes before t0 and the one at
// exit after the call's ticks are taken.
struct CostTimer {
  ThreadCost* tc;
  CostSite site;
  bool on;
  bool probed;  // the slow-call probe was on at construction: `usage` holds the entry's
  ThreadUsage usage;
  uint64_t t0, first0, diagnostic0;
  CostTimer(ThreadCost* t, CostSite s)
      : tc(t),
        site(s),
        on(t->Count(s)),
        probed(__builtin_expect(SlowCallProbe::On(), 0)),
        usage(probed ? ThreadUsage::Read() : ThreadUsage{}),
        t0(CpuTicks()),
        first0(t_first_time_ticks),
        diagnostic0(t_diagnostic_ticks) {}
  void Finish() {
    const uint64_t first = t_first_time_ticks - first0;
    if (__builtin_expect(first != 0, 0)) NoteFirstTimeInCall(first);
    const uint64_t t = CpuTicks() - t0 - first - (t_diagnostic_ticks - diagnostic0);
    tc->AddSample(site, t);
    if (__builtin_expect(probed, 0) &&
        t >= SlowCallProbe::min_ticks.load(std::memory_order_relaxed))
      tc->ClassifySlow(site, usage, t);
  }
};

// The writer thread's CPU time per phase, in ns.
struct WriterCost {
  uint64_t flush_ns = 0;    // cuptiActivityFlushAll (buffer delivery)
  uint64_t convert_ns = 0;  // CUPTI records -> rows (appending encodes full chunks)
  uint64_t drain_ns = 0;    // stack rings, sync rows, stack tables, modules
  uint64_t write_ns = 0;    // encoding the rest and write(2) at each flush
  uint64_t total_ns = 0;    // all CPU time of the writer thread
};

// One (name, value) stat per line of the cost summary, for the trace's stat
// table: capture.cost.<site>.calls / .ns (estimated) / .sampled,
// capture.cost.first_time.calls / .ns (every piece of first-time work on
// any thread, timed exactly; not in the sites' figures),
// capture.cost.<site>.p50_ns / .p90_ns / .p99_ns / .p999_ns (one timed call,
// from the histogram: the bucket's geometric middle, within 12%), .max_ns
// (the slowest timed call, exact), .over_100us (timed calls of 100 us and
// more, by the histogram's buckets), .slow_share_x1000 (share of the site's
// timed ticks in calls of 10 us and more), capture.cost.first_time.max_ns,
// capture.cost.first_time.call_max_ns (the most in one callback, pieces added),
// capture.cost.<site>.slow_<class> (the slow-call probe's classes, when on),
// capture.cost.stack.frames_native / frames_python (mean per sampled stack,
// x1000), capture.cost.writer.<phase>_ns.
struct CostStat {
  std::string name;
  uint64_t value;
};
// Sums every thread's counters; `ns_per_tick` from a TickRate.
std::vector<CostStat> CollectCostStats(double ns_per_tick, const WriterCost& writer);

}  // namespace tracesmith::capture
