// ThreadRings: per-thread SPSC rings drained by one consumer.
#include "capture/thread_rings.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tracesmith::capture {
namespace {

struct OrderTag {};
struct FullTag {};
struct ThreadsTag {};

TEST(ThreadRings, DrainsInPushOrder) {
  using Rings = ThreadRings<uint64_t, 16, OrderTag>;
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(Rings::Push(i));
  std::vector<uint64_t> got;
  Rings::Drain([&](uint64_t v) { got.push_back(v); });
  ASSERT_EQ(got.size(), 10u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(got[i], i);
  got.clear();
  Rings::Drain([&](uint64_t v) { got.push_back(v); });
  EXPECT_TRUE(got.empty());
}

// The producer's cached copy of the consumer's index must be refreshed once
// the ring looks full: after a drain the ring takes a full lap again.
TEST(ThreadRings, AFullRingDropsAndCountsThenTakesAFullLapAfterADrain) {
  using Rings = ThreadRings<uint64_t, 8, FullTag>;
  for (int lap = 0; lap < 3; ++lap) {
    for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(Rings::Push(100 * lap + i)) << lap << " " << i;
    EXPECT_FALSE(Rings::Push(999));
    EXPECT_EQ(Rings::dropped(), uint64_t(lap + 1));
    std::vector<uint64_t> got;
    Rings::Drain([&](uint64_t v) { got.push_back(v); });
    ASSERT_EQ(got.size(), 8u);
    EXPECT_EQ(got.front(), uint64_t(100 * lap));
    EXPECT_EQ(got.back(), uint64_t(100 * lap + 7));
  }
}

TEST(ThreadRings, OneRingPerThreadEveryItemOnceWhileDrainingConcurrently) {
  using Rings = ThreadRings<uint64_t, 64, ThreadsTag>;
  constexpr int kThreads = 4;
  constexpr uint64_t kItems = 20000;
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &done] {
      for (uint64_t i = 0; i < kItems; ++i)
        while (!Rings::Push(uint64_t(t) << 32 | i)) std::this_thread::yield();
      done.fetch_add(1);
    });
  }
  std::vector<uint64_t> next(kThreads, 0);
  uint64_t total = 0;
  auto take = [&](uint64_t v) {
    int t = int(v >> 32);
    ASSERT_LT(t, kThreads);
    EXPECT_EQ(v & 0xffffffffu, next[t]);  // in order within a thread
    ++next[t];
    ++total;
  };
  while (done.load() < kThreads) Rings::Drain(take);
  Rings::Drain(take);
  for (auto& th : threads) th.join();
  EXPECT_EQ(total, kThreads * kItems);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], kItems);
}

}  // namespace
}  // namespace tracesmith::capture
