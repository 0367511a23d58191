// KernelWatchdog (src/hardware/kernel_watchdog.h): --kernel-timeout's
// bookkeeping, fed as the PC sampling recorder feeds it.
#include "hardware/kernel_watchdog.h"

#include <gtest/gtest.h>

namespace tracesmith::hardware {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kWindow = 20 * kMs;

// Samples of `f` at one instruction in every 20-ms window of [from, to).
void Sample(KernelWatchdog& w, const char* f, uint64_t from, uint64_t to, uint32_t pc = 0x40,
            uint64_t n = 100) {
  for (uint64_t t = from; t < to; t += kWindow) w.OnSamples(f, 0, t, t + kWindow, {7, pc, 1, n});
}

TEST(KernelWatchdog, NamesTheLaunchOfAKernelSampledPastTheTimeout) {
  KernelWatchdog w(3000 * kMs);
  w.OnLaunch("fast", 1, 100 * kMs, 11, 0);
  w.OnLaunch("spin", 2, 110 * kMs, 22, 0);
  Sample(w, "fast", 100 * kMs, 140 * kMs);
  w.OnCompleted(1, 140 * kMs);
  Sample(w, "spin", 140 * kMs, 3100 * kMs, 0x80);
  EXPECT_TRUE(w.Check(3100 * kMs).empty()) << "2.96 s of samples: not yet";
  Sample(w, "spin", 3100 * kMs, 3200 * kMs, 0x90, 300);
  auto fired = w.Check(3200 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  const auto& t = fired[0];
  EXPECT_EQ(t.function, "spin");
  EXPECT_EQ(t.correlation_id, 2u);
  EXPECT_EQ(t.stack_id, 22u);
  EXPECT_EQ(t.launch_ns, 110 * kMs);
  EXPECT_EQ(t.running_since_ns, 140 * kMs);
  EXPECT_EQ(t.samples, 148u * 100 + 5 * 300);
  ASSERT_EQ(t.hottest.size(), 2u);
  EXPECT_EQ(t.hottest[0].pc_offset, 0x80u);
  EXPECT_EQ(t.hottest[0].samples, 14800u);
  EXPECT_EQ(t.hottest[1].pc_offset, 0x90u);
  EXPECT_TRUE(w.Check(3300 * kMs).empty()) << "each launch is reported once";
  EXPECT_EQ(w.timeouts(), 1u);
}

TEST(KernelWatchdog, AFunctionLaunchedOverAndOverIsNotAHang) {
  // 10 s of back-to-back launches of one kernel, 5 ms each: samples in every
  // window, but its launches complete.
  KernelWatchdog w(1000 * kMs);
  uint32_t corr = 1;
  for (uint64_t t = 0; t < 10'000 * kMs; t += 5 * kMs, ++corr) {
    w.OnLaunch("loop", corr, t, 1, 0);
    if (t % kWindow == 0) w.OnSamples("loop", 0, t, t + kWindow, {7, 0x10, 1, 50});
    w.OnCompleted(corr, t + 5 * kMs);
    if (t % (100 * kMs) == 0) {
      EXPECT_TRUE(w.Check(t).empty()) << t / kMs << " ms";
    }
  }
  EXPECT_EQ(w.outstanding(), 0u);
}

TEST(KernelWatchdog, ALaunchQueuedLongButNotRunningIsNotAHang) {
  // Launched at 0, never sampled (its stream waits on a host event).
  KernelWatchdog w(1000 * kMs);
  w.OnLaunch("waiting", 1, 0, 1, 0);
  Sample(w, "other", 0, 5000 * kMs);
  EXPECT_TRUE(w.Check(5000 * kMs).empty());
  // It starts at 5 s: the timeout counts from its first samples.
  Sample(w, "waiting", 5000 * kMs, 5900 * kMs);
  EXPECT_TRUE(w.Check(5900 * kMs).empty());
  Sample(w, "waiting", 5900 * kMs, 6100 * kMs);
  auto fired = w.Check(6100 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].running_since_ns, 5000 * kMs);
}

TEST(KernelWatchdog, AKernelThatStoppedBeingSampledIsNotReported) {
  // Its completion record has not arrived, but its warps left the SMs 1 s ago.
  KernelWatchdog w(1000 * kMs);
  w.OnLaunch("done", 1, 0, 1, 0);
  Sample(w, "done", 0, 1500 * kMs);
  Sample(w, "other", 1500 * kMs, 2500 * kMs);
  EXPECT_TRUE(w.Check(2500 * kMs).empty());
}

TEST(KernelWatchdog, AGapInTheSamplesStartsANewRun) {
  KernelWatchdog w(1000 * kMs);
  w.OnLaunch("k", 1, 0, 1, 0);
  Sample(w, "k", 0, 800 * kMs);
  Sample(w, "k", 1200 * kMs, 2000 * kMs);  // 400 ms without samples
  EXPECT_TRUE(w.Check(2000 * kMs).empty());
  Sample(w, "k", 2000 * kMs, 2300 * kMs);
  auto fired = w.Check(2300 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].running_since_ns, 1200 * kMs);
  EXPECT_EQ(fired[0].samples, 55u * 100) << "only the run's samples";
}

TEST(KernelWatchdog, QueuedLaunchesOfAHungKernelAreReportedOnce) {
  KernelWatchdog w(1000 * kMs);
  for (uint32_t c = 1; c <= 3; ++c) w.OnLaunch("spin", c, c * kMs, c, 0);
  Sample(w, "spin", 10 * kMs, 1500 * kMs);
  ASSERT_EQ(w.Check(1500 * kMs).size(), 1u);
  EXPECT_TRUE(w.Check(1600 * kMs).empty());
  EXPECT_TRUE(w.Check(5000 * kMs).empty());
}

TEST(KernelWatchdog, UnwatchedCompletionsAndSamplesAreIgnoredAndMemoryIsBounded) {
  KernelWatchdog w(1000 * kMs, 0, /*max_outstanding=*/1000);
  w.OnCompleted(99, 5);                            // a launch before the capture
  w.OnSamples("graph_kernel", 0, 0, kWindow, {});  // a function never launched while watched
  EXPECT_TRUE(w.Check(10'000 * kMs).empty());
}

TEST(KernelWatchdog, PastTheBoundTheLaunchesOfFunctionsNotSampledLatelyGoFirst) {
  KernelWatchdog w(1000 * kMs, 0, /*max_outstanding=*/1000);
  w.OnLaunch("spin", 5000, 0, 0, 0);
  Sample(w, "spin", 0, 2000 * kMs);
  for (uint32_t c = 1; c <= 999; ++c) w.OnLaunch("f", c, c, 0, 0);  // never sampled
  w.OnLaunch("f", 1000, 1000, 0, 0);  // the bound: "f"'s 999 go, the sampled one stays
  EXPECT_EQ(w.launches_forgotten(), 999u);
  EXPECT_EQ(w.outstanding(), 2u);
  auto fired = w.Check(2000 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].correlation_id, 5000u);
}

TEST(KernelWatchdog, AReportedLaunchThatCompletesLetsTheNextHangBeReported) {
  KernelWatchdog w(1000 * kMs);
  w.OnLaunch("k", 1, 0, 1, 0);
  Sample(w, "k", 0, 1500 * kMs);
  ASSERT_EQ(w.Check(1500 * kMs).size(), 1u);  // a long kernel, reported
  w.OnCompleted(1, 1600 * kMs);               // ... which then ends
  w.OnLaunch("k", 2, 1700 * kMs, 2, 0);       // the next launch hangs
  Sample(w, "k", 1700 * kMs, 2800 * kMs);
  auto fired = w.Check(2800 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].correlation_id, 2u);
  EXPECT_EQ(fired[0].running_since_ns, 1700 * kMs);
}

TEST(KernelWatchdog, KernelsOfOneNameOnTwoDevicesAreWatchedApart) {
  // The same kernel completes over and over on device 1; on device 0 it hangs.
  KernelWatchdog w(1000 * kMs);
  w.OnLaunch("k", 1, 0, 1, /*device_id=*/0);
  uint32_t corr = 100;
  for (uint64_t t = 0; t < 1500 * kMs; t += kWindow, ++corr) {
    w.OnSamples("k", 0, t, t + kWindow, {7, 0x10, 1, 10});
    w.OnLaunch("k", corr, t, 2, 1);
    w.OnSamples("k", 1, t, t + kWindow, {7, 0x10, 1, 10});
    w.OnCompleted(corr, t + kWindow);
  }
  auto fired = w.Check(1500 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].device_id, 0u);
  EXPECT_EQ(fired[0].correlation_id, 1u);
}

TEST(KernelWatchdog, AKernelMustStayPastTheTimeoutForTheConfirmationTime) {
  // Completions arrive once per flush: a candidate waits `confirm` for them.
  KernelWatchdog w(1000 * kMs, /*confirm_ns=*/1000 * kMs);
  w.OnLaunch("busy", 1, 0, 1, 0);
  Sample(w, "busy", 0, 1200 * kMs);
  EXPECT_TRUE(w.Check(1200 * kMs).empty());  // past the timeout: a candidate from now
  w.OnCompleted(1, 1100 * kMs);              // the next flush brings its completion
  w.OnLaunch("busy", 2, 1100 * kMs, 1, 0);
  Sample(w, "busy", 1200 * kMs, 2100 * kMs);
  EXPECT_TRUE(w.Check(2000 * kMs).empty()) << "counted again from the completion";
  Sample(w, "busy", 2100 * kMs, 3300 * kMs);
  EXPECT_TRUE(w.Check(2200 * kMs).empty());   // past the timeout since 2.1 s: a candidate
  EXPECT_TRUE(w.Check(3100 * kMs).empty());   // 0.9 s of the 1-s confirmation
  EXPECT_EQ(w.Check(3300 * kMs).size(), 1u);  // confirmed
}

}  // namespace
}  // namespace tracesmith::hardware
