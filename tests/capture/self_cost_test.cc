// The capture's self-cost accounting: counting, sampling, estimates.
#include "tracesmith/capture/self_cost.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>

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

}  // namespace
}  // namespace tracesmith::capture
