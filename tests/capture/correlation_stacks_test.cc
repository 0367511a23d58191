// CorrelationStacks: (correlation id -> stack id) pairs recorded on the
// application's threads (CUPTI callbacks), drained and looked up by the
// writer thread.
#include "capture/correlation_stacks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tracesmith/capture/stack_hook.h"

namespace tracesmith::capture {
namespace {

uint32_t StackOf(uint32_t correlation_id) { return correlation_id * 7 + 1; }

uint32_t TestHook() { return 42; }

TEST(CorrelationStacks, FindsWhatWasRecordedOnceDrained) {
  CorrelationStacks stacks;
  EXPECT_EQ(stacks.Find(5), 0u);
  CorrelationStacks::Record(5, 17);
  EXPECT_EQ(stacks.Find(5), 0u);  // not drained yet
  stacks.Drain();
  EXPECT_EQ(stacks.Find(5), 17u);
  EXPECT_EQ(stacks.Find(6), 0u);
}

// Application threads record pairs (distinct correlation ids, as CUPTI
// gives) without waiting, while the writer thread drains and looks ids up,
// as it does every poll; the hook is read on those threads and set on
// another (the session's). Every pair is found with its own stack id, or
// was dropped by a full ring and counted. Run under ThreadSanitizer (label
// tsan).
TEST(CorrelationStacks, RecordedOnManyThreadsWhileTheWriterDrains) {
  constexpr int kThreads = 4;
  constexpr uint32_t kPerThread = 60000;  // over kRingSize: some drains come late
  const uint64_t dropped_before = CorrelationStacks::dropped();
  CorrelationStacks stacks;
  std::atomic<int> done{0};
  std::atomic<uint64_t> hooked{0};
  std::vector<std::thread> app;
  for (int t = 0; t < kThreads; ++t) {
    app.emplace_back([&, t] {
      for (uint32_t i = 0; i < kPerThread; ++i) {
        const uint32_t corr = 1 + uint32_t(t) * kPerThread + i;
        if (StackHook hook = GetStackHook()) hooked.fetch_add(hook() == 42);
        CorrelationStacks::Record(corr, StackOf(corr));
      }
      done.fetch_add(1);
    });
  }
  std::thread session([] {
    for (int i = 0; i < 1000; ++i) SetStackHook(i % 2 ? &TestHook : nullptr);
    SetStackHook(nullptr);
  });
  uint64_t wrong = 0;
  while (done.load() < kThreads) {  // the writer's poll
    stacks.Drain();
    for (uint32_t corr = 1; corr <= kThreads * kPerThread; corr += 997) {
      const uint32_t s = stacks.Find(corr);
      wrong += s != 0 && s != StackOf(corr);
    }
  }
  for (auto& th : app) th.join();
  session.join();
  stacks.Drain();

  uint64_t found = 0;
  for (uint32_t corr = 1; corr <= kThreads * kPerThread; ++corr) {
    const uint32_t s = stacks.Find(corr);
    wrong += s != 0 && s != StackOf(corr);
    found += s != 0;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(found + (CorrelationStacks::dropped() - dropped_before),
            uint64_t{kThreads} * kPerThread);
  EXPECT_GT(found, 0u);
}

}  // namespace
}  // namespace tracesmith::capture
