// The capture-cost accounting: counting, sampling, estimates.
#include "tracesmith/capture/capture_cost.h"

#include "tracesmith/base/first_time_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace tracesmith::capture {
namespace {

std::map<std::string, uint64_t> Stats(double ns_per_tick) {
  std::map<std::string, uint64_t> m;
  for (const CostStat& s : CollectCostStats(ns_per_tick, WriterCost{1, 2, 3, 4, 10}))
    m[s.name] = s.value;
  return m;
}

TEST(SelfCost, EstimatesTotalsFromSampledCalls) {
  auto before = Stats(1.0);
  // A thread of its own, so its counters start at zero.
  std::thread([] {
    ThreadCost* tc = ThreadCost::Get();
    int sampled = 0;
    for (int i = 0; i < 80000; ++i) {
      if (tc->Count(CostSite::kMemset)) {
        tc->AddSample(CostSite::kMemset, 100);  // every timed call took 100 ticks
        ++sampled;
      }
    }
    // About 1 in kSampleEvery, and not in lock step with a period of 8.
    EXPECT_NEAR(sampled, 80000 / int(ThreadCost::kSampleEvery), 800);
  }).join();
  auto after = Stats(2.0);  // 2 ns per tick
  EXPECT_EQ(after["capture.cost.memset.calls"] - before["capture.cost.memset.calls"], 80000u);
  // 80000 calls x 100 ticks x 2 ns, whatever the sample.
  EXPECT_EQ(after["capture.cost.memset.ns"], 16000000u);
  EXPECT_EQ(after["capture.cost.writer.total_ns"], 10u);
}

TEST(SelfCost, StackPartsShareTheStackCallCount) {
  std::thread([] {
    ThreadCost* tc = ThreadCost::Get();
    for (int i = 0; i < 100; ++i) ThreadCost::Bump(tc->calls[int(CostSite::kStack)], 1);
    tc->AddSample(CostSite::kStack, 50);
    tc->AddSample(CostSite::kStackUnwind, 30);
  }).join();
  auto m = Stats(1.0);
  EXPECT_EQ(m["capture.cost.stack.unwind.calls"], m["capture.cost.stack.calls"]);
  EXPECT_GE(m["capture.cost.stack.calls"], 100u);
}

// Busy for at least `ticks` ticks.
void Spin(uint64_t ticks) {
  uint64_t t0 = CpuTicks();
  while (CpuTicks() - t0 < ticks) {
  }
}

// 400 calls at `site` on a new thread, each running `inside` under its timer.
template <typename Fn>
void TimedCallsOnAThread(CostSite site, Fn inside) {
  std::thread([site, inside] {
    ThreadCost* tc = ThreadCost::Get();
    for (int i = 0; i < 400; ++i) {
      CostTimer timer(tc, site);
      inside();
      timer.Finish();
    }
  }).join();
}

TEST(SelfCost, FirstTimeWorkIsReportedApartFromTheCallsItHappenedIn) {
  auto before = Stats(1.0);
  TimedCallsOnAThread(CostSite::kCopy, [] {
    FirstTimeWork once(
        FirstTimeKind::kRule);  // e.g. an unwind rule computed for a new return address
    Spin(200000);
  });
  auto after = Stats(1.0);
  EXPECT_EQ(after["capture.cost.first_time.calls"] - before["capture.cost.first_time.calls"], 400u);
  EXPECT_GE(after["capture.cost.first_time.ns"] - before["capture.cost.first_time.ns"],
            400u * 200000u);
  // The copy calls did little else: far less than one piece of first-time work each.
  ASSERT_GT(after["capture.cost.copy.sampled"], 0u);
  EXPECT_LT(after["capture.cost.copy.ns"] / 400, 20000u);
  EXPECT_LT(after["capture.cost.copy.p99_ns"], 20000u);
}

// Diagnostics' time (the rewalk, the stack copy probe) is left out of the
// site whose call they ran in.
TEST(SelfCost, DiagnosticTimeIsLeftOutOfTheSite) {
  auto before = Stats(1.0);
  TimedCallsOnAThread(CostSite::kGraph, [] {
    const uint64_t t0 = CpuTicks();
    Spin(200000);
    t_diagnostic_ticks += CpuTicks() - t0;
  });
  auto after = Stats(1.0);
  ASSERT_GT(after["capture.cost.graph.sampled"], before["capture.cost.graph.sampled"]);
  EXPECT_LT(after["capture.cost.graph.p99_ns"], 20000u);
}

TEST(SelfCost, BucketsCoverEveryTickCountInOrder) {
  // Each tick count lands in the bucket whose range holds it; ranges are
  // contiguous and a quarter octave wide.
  for (uint64_t t : {0ull, 1ull, 3ull, 4ull, 5ull, 7ull, 8ull, 9ull, 15ull, 100ull, 1000ull,
                     123456ull, 1ull << 31, (1ull << 32) - 1}) {
    int b = CostBucket(t);
    EXPECT_LE(CostBucketStart(b), t) << t;
    if (b + 1 < kCostBuckets) {
      EXPECT_LT(t, CostBucketStart(b + 1)) << t;
    }
  }
  EXPECT_EQ(CostBucket(4), 8);
  EXPECT_EQ(CostBucket(7), 11);
  EXPECT_EQ(CostBucket(8), 12);
  EXPECT_EQ(CostBucket(1000), 4 * 9 + 3);  // 1000 = 0b1111101000: [896, 1024)
  EXPECT_EQ(CostBucketStart(4 * 9 + 3), 896u);
  EXPECT_EQ(CostBucket(~0ull), kCostBuckets - 1);
}

TEST(SelfCost, MedianAndTailOfTimedCalls) {
  auto before = Stats(1.0);
  std::thread([] {
    ThreadCost* tc = ThreadCost::Get();
    // 980 calls of 200 ticks and 20 of 50,000: the mean (1,196) says
    // neither what a call costs nor that a few slow ones carry most of it.
    for (int i = 0; i < 1000; ++i) {
      ThreadCost::Bump(tc->calls[int(CostSite::kDriverRow)], 1);
      tc->AddSample(CostSite::kDriverRow, i % 50 == 7 ? 50000 : 200);
    }
  }).join();
  auto after = Stats(1.0);
  ASSERT_EQ(before.count("capture.cost.driver_exit.p50_ns"), 0u);
  EXPECT_EQ(after["capture.cost.driver_exit.ns"], 1196000u);
  // 200 is in [192, 224): middle 207; 50,000 in [49152, 57344): middle 53,090.
  EXPECT_EQ(after["capture.cost.driver_exit.p50_ns"], 207u);
  EXPECT_EQ(after["capture.cost.driver_exit.p90_ns"], 207u);
  EXPECT_EQ(after["capture.cost.driver_exit.p99_ns"], 53090u);
  // 20 x 53,090 of (20 x 53,090 + 980 x 207) ticks in calls of 10 us and more.
  EXPECT_EQ(after["capture.cost.driver_exit.slow_share_x1000"], 839u);
}

// Issue #41 item 2: every call is timed, so one slow call in a million is
// its site's maximum, and the calls of 100 us and more are counted.
TEST(SelfCost, EveryCallIsTimed) {
  auto before = Stats(1.0);
  std::thread([] {
    ThreadCost* tc = ThreadCost::Get();
    for (int i = 0; i < 10000; ++i) {
      CostTimer timer(tc, CostSite::kBuffer);
      timer.Finish();
    }
  }).join();
  auto after = Stats(1.0);
  // Every CostTimer call is timed, not one in kSampleEvery.
  EXPECT_EQ(after["capture.cost.buffer.sampled"] - before["capture.cost.buffer.sampled"], 10000u);
  EXPECT_EQ(after["capture.cost.buffer.calls"] - before["capture.cost.buffer.calls"], 10000u);
  EXPECT_GT(after["capture.cost.buffer.max_ns"], 0u);
}

TEST(SelfCost, MaximumAndCallsOver100us) {
  auto before = Stats(1.0);
  ASSERT_EQ(before.count("capture.cost.alloc.max_ns"), 0u);  // no other test times alloc
  std::thread([] {
    ThreadCost* tc = ThreadCost::Get();
    // 100,000 calls of 500 ticks and two stalls: 4.5 ms and 150 us (at 1 ns per tick).
    for (int i = 0; i < 100002; ++i) ThreadCost::Bump(tc->calls[int(CostSite::kAlloc)], 1);
    for (int i = 0; i < 100000; ++i) tc->AddSample(CostSite::kAlloc, 500);
    tc->AddSample(CostSite::kAlloc, 4500000);
    tc->AddSample(CostSite::kAlloc, 150000);
  }).join();
  auto after = Stats(1.0);
  EXPECT_EQ(after["capture.cost.alloc.max_ns"], 4500000u);
  EXPECT_EQ(after["capture.cost.alloc.over_100us"], 2u);
  // The 99.9th percentile is a typical call's bucket (500 is in [448, 512): 479).
  EXPECT_EQ(after["capture.cost.alloc.p999_ns"], 479u);
  // At 2 ns per tick the same counters read twice as long.
  EXPECT_EQ(Stats(2.0)["capture.cost.alloc.max_ns"], 9000000u);
}

// The longest piece of first-time work, exact.
TEST(SelfCost, LongestFirstTimeWork) {
  uint64_t before = g_first_time_max_ticks.load();
  std::thread([] {
    FirstTimeWork w(FirstTimeKind::kRule);
    const uint64_t t0 = CpuTicks();
    while (CpuTicks() - t0 < 2000000) {
    }
  }).join();
  EXPECT_GE(g_first_time_max_ticks.load(), std::max<uint64_t>(before, 2000000));
  EXPECT_GT(Stats(1.0)["capture.cost.first_time.max_ns"], 0u);
}

// The most first-time work in one callback: its pieces added up (a new
// stack's rules and its interning are separate pieces, one wait).
TEST(SelfCost, FirstTimeWorkInOneCallbackIsAddedUp) {
  std::thread([] {
    CostTimer timer(ThreadCost::Get(), CostSite::kLaunch);
    for (int i = 0; i < 3; ++i) {
      FirstTimeWork w(FirstTimeKind::kRule);
      const uint64_t t0 = CpuTicks();
      while (CpuTicks() - t0 < 3000000) {
      }
    }
    timer.Finish();
  }).join();
  EXPECT_GE(g_first_time_call_max_ticks.load(), 9000000u);
  EXPECT_GE(Stats(1.0)["capture.cost.first_time.call_max_ns"], 9000000u);
}

// A piece inside another (the collector's lock waited for while interning) is its own kind's:
// the outer kind keeps only its own time, the totals count the outer piece once, and the
// slowest callback's parts say which was which (issue #41 item 2).
TEST(SelfCost, NestedFirstTimeWorkIsItsOwnKindsAndCountedOnce) {
  auto spin = [](uint64_t ticks) {
    const uint64_t t0 = CpuTicks();
    while (CpuTicks() - t0 < ticks) {
    }
  };
  const int intern = int(FirstTimeKind::kIntern), wait = int(FirstTimeKind::kInternWait);
  const uint64_t events0 = g_first_time_events.load(), ticks0 = g_first_time_ticks.load();
  const uint64_t intern0 = g_first_time_kind_ticks[intern].load();
  const uint64_t wait0 = g_first_time_kind_ticks[wait].load();
  std::thread([&] {
    CostTimer timer(ThreadCost::Get(), CostSite::kLaunch);
    {
      FirstTimeWork outer(FirstTimeKind::kIntern);
      spin(1000000);
      {
        FirstTimeWork inner(FirstTimeKind::kInternWait);
        spin(50000000);  // far the larger part: this callback's maximum
      }
    }
    timer.Finish();
  }).join();
  EXPECT_EQ(g_first_time_events.load() - events0, 1u);
  const uint64_t total = g_first_time_ticks.load() - ticks0;
  const uint64_t own_intern = g_first_time_kind_ticks[intern].load() - intern0;
  const uint64_t own_wait = g_first_time_kind_ticks[wait].load() - wait0;
  EXPECT_GE(own_wait, 50000000u);
  EXPECT_GE(own_intern, 1000000u);
  EXPECT_LT(own_intern, 50000000u);
  EXPECT_EQ(own_intern + own_wait, total);
  EXPECT_GE(g_first_time_call_max_kind[wait].load(), 50000000u);
  EXPECT_LT(g_first_time_call_max_kind[intern].load(), 50000000u);
  auto stats = Stats(1.0);
  EXPECT_GE(stats["capture.cost.first_time.lock_wait.in_call_max_ns"], 50000000u);
  EXPECT_GE(stats["capture.cost.first_time.lock_wait.max_ns"], 50000000u);
}

// The writer sums the per-thread counters (CollectCostStats) while the
// application's threads count and time their calls and new threads
// register: the sums only grow, and once the threads are done they are
// exact. Run under ThreadSanitizer (label tsan).
TEST(SelfCost, CollectedWhileThreadsCountAndRegister) {
  constexpr int kThreads = 4;
  constexpr uint64_t kCalls = 20000;
  auto before = Stats(1.0);
  std::atomic<int> done{0};
  std::vector<std::thread> app;
  for (int t = 0; t < kThreads; ++t)
    app.emplace_back([&] {
      ThreadCost* tc = ThreadCost::Get();  // registers while the writer reads the list
      for (uint64_t i = 0; i < kCalls; ++i) {
        CostTimer timer(tc, CostSite::kSync);
        if (i % 5000 == 0) FirstTimeWork once(FirstTimeKind::kRule);
        timer.Finish();
      }
      done.fetch_add(1);
    });
  uint64_t last = 0;
  while (done.load() < kThreads) {
    const uint64_t calls = Stats(1.0)["capture.cost.sync.calls"];
    EXPECT_GE(calls, last);
    last = calls;
  }
  for (auto& th : app) th.join();
  auto after = Stats(1.0);
  EXPECT_EQ(after["capture.cost.sync.calls"] - before["capture.cost.sync.calls"],
            kThreads * kCalls);
  EXPECT_EQ(after["capture.cost.first_time.calls"] - before["capture.cost.first_time.calls"],
            uint64_t{kThreads} * (kCalls / 5000));
  EXPECT_GT(after["capture.cost.sync.sampled"], before["capture.cost.sync.sampled"]);
}

// The slow-call probe (TRACESMITH_SLOW_CALL_PROBE=1): a slow call is classed by what
// its thread's usage says happened meanwhile; fast calls are not classed.
TEST(SelfCost, SlowCallProbeClassesSlowCalls) {
  SlowCallProbe::Enable(true);
  ASSERT_TRUE(SlowCallProbe::On());
  EXPECT_GT(SlowCallProbe::min_ticks.load(), 1000u);  // 100 us at a tick rate of 10 MHz or more
  uint64_t classed[kSlowClasses] = {};
  std::thread([&] {
    ThreadCost* tc = ThreadCost::Get();
    const auto slow = [&](SlowClass c) { return tc->slow[int(CostSite::kLaunch)][int(c)].load(); };
    // The classes, from usage differences made up.
    ThreadUsage u = ThreadUsage::Read();
    u.nivcsw -= 1;
    tc->ClassifySlow(CostSite::kLaunch, u, 0);
    EXPECT_EQ(slow(SlowClass::kPreempted), 1u);
    u = ThreadUsage::Read();
    u.minflt -= 3;
    tc->ClassifySlow(CostSite::kLaunch, u, 0);
    u = ThreadUsage::Read();
    u.majflt -= 1;
    tc->ClassifySlow(CostSite::kLaunch, u, 0);
    // No switch, no fault: a call whose thread ran for less than half of it was
    // interrupted (the kernel gave the time to interrupts or the hypervisor); one that
    // ran for it is unexplained. (A real switch meanwhile classes it as such.)
    const uint64_t ms = 10 * SlowCallProbe::min_ticks.load();
    const auto switched = [&] { return slow(SlowClass::kBlocked) + slow(SlowClass::kPreempted); };
    uint64_t before = slow(SlowClass::kInterrupted) + switched();
    tc->ClassifySlow(CostSite::kLaunch, ThreadUsage::Read(), ms);
    EXPECT_EQ(slow(SlowClass::kInterrupted) + switched(), before + 1);
    before = slow(SlowClass::kNone) + switched();
    u = ThreadUsage::Read();
    u.cpu_ns -= 2000000;  // 2 ms of CPU time in a 1-ms call
    tc->ClassifySlow(CostSite::kLaunch, u, ms);
    EXPECT_EQ(slow(SlowClass::kNone) + switched(), before + 1);
    // A call that sleeps 300 us leaves its CPU: blocked (or preempted, on a busy machine).
    const uint64_t away = slow(SlowClass::kBlocked) + slow(SlowClass::kPreempted);
    {
      CostTimer t(tc, CostSite::kLaunch);
      usleep(300);
      t.Finish();
    }
    EXPECT_EQ(slow(SlowClass::kBlocked) + slow(SlowClass::kPreempted), away + 1);
    for (int i = 0; i < 1000; ++i) {  // fast calls
      CostTimer t(tc, CostSite::kLaunch);
      t.Finish();
    }
    for (int c = 0; c < kSlowClasses; ++c) classed[c] = slow(SlowClass(c));
  }).join();
  EXPECT_GE(classed[int(SlowClass::kFaulted)], 2u);  // the made-up ones (left alone if preempted)
  uint64_t total = 0;
  for (uint64_t c : classed) total += c;
  // The six classed calls, and a fast call only if the thread lost its CPU for 100 us
  // (switched out, or interrupted).
  EXPECT_GE(total, 6u);
  EXPECT_EQ(classed[int(SlowClass::kFaulted)] + classed[int(SlowClass::kNone)], 3u);
  auto m = Stats(1.0);
  EXPECT_EQ(m["capture.cost.launch.slow_faulted"], classed[int(SlowClass::kFaulted)]);
  EXPECT_TRUE(m.count("capture.cost.launch.slow_unexplained"));
  SlowCallProbe::Enable(false);
  EXPECT_FALSE(Stats(1.0).count("capture.cost.launch.slow_unexplained"));
}

}  // namespace
}  // namespace tracesmith::capture
