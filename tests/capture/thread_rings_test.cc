// ThreadRings: per-thread SPSC rings drained by one consumer.
#include "tracesmith/capture/thread_rings.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>

#include <atomic>
#include <thread>
#include <vector>

namespace tracesmith::capture {
namespace {

struct OrderTag {};
struct FullTag {};
struct ThreadsTag {};
struct DropsTag {};
struct SpareTag {};
struct NoSpareTag {};

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

// Under a sanitizer the runtime's own shadow and bookkeeping pages fault in on the thread (its
// allocator's, its lock's sync object, the shadow of the slots written): the page-fault figures
// are the plain build's. Asked at run time: under the ASan preset this test's own units are not
// instrumented (tests/CMakeLists.txt), only linked with the runtime, whose allocator is used.
bool UnderSanitizer() {
  return dlsym(RTLD_DEFAULT, "__asan_init") != nullptr ||
         dlsym(RTLD_DEFAULT, "__tsan_init") != nullptr;
}
const bool kCountsFaults = !UnderSanitizer();

uint64_t ThreadMinorFaults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return uint64_t(u.ru_minflt);
}

// A new thread's first push takes the ring the consumer made and touched at its last drain: no
// allocation, no page fault inside the call that pushed (issue #41 item 2: a 128-KiB ring's 32
// faults cost 100-300 us on a VM). Without a spare the thread's own ring leaves its slots
// untouched: the first push faults in one page of them, not 32.
TEST(ThreadRings, ANewThreadsFirstPushTakesTheConsumersTouchedSpareWithoutAPageFault) {
  using Rings = ThreadRings<uint64_t, 1u << 14, SpareTag>;  // 128 KiB, past malloc's mmap threshold
  ASSERT_TRUE(Rings::Push(1));                              // the type in use
  Rings::Drain([](uint64_t) {});  // makes the spare and, the type being in use, touches it
  uint64_t faults = ~uint64_t{0}, taken_before = Rings::spares_taken();
  std::thread([&] {
    ThreadMinorFaults();  // (its own first call)
    const uint64_t f0 = ThreadMinorFaults();
    EXPECT_TRUE(Rings::Push(2));
    faults = ThreadMinorFaults() - f0;
  }).join();
  EXPECT_EQ(Rings::spares_taken(), taken_before + 1);
  if (kCountsFaults) {
    EXPECT_EQ(faults, 0u);
  }
  std::vector<uint64_t> got;
  Rings::Drain([&](uint64_t v) { got.push_back(v); });
  EXPECT_EQ(got, std::vector<uint64_t>{2});
}

TEST(ThreadRings, WithoutASpareANewThreadsRingFaultsInOnlyThePagesItWrites) {
  using Rings = ThreadRings<uint64_t, 1u << 14, NoSpareTag>;  // never drained: no spare
  uint64_t faults = ~uint64_t{0};
  std::thread([&] {
    ThreadMinorFaults();
    void* warm = malloc(64);  // the thread's arena made before the measured push
    free(warm);
    const uint64_t f0 = ThreadMinorFaults();
    EXPECT_TRUE(Rings::Push(7));
    faults = ThreadMinorFaults() - f0;
  }).join();
  EXPECT_EQ(Rings::spares_taken(), 0u);
  if (kCountsFaults) {
    EXPECT_LE(faults, 4u);  // the ring's header and first slot page
  }
  std::vector<uint64_t> got;
  Rings::Drain([&](uint64_t v) { got.push_back(v); });
  EXPECT_EQ(got, std::vector<uint64_t>{7});
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

// Producers that never wait (as in a CUPTI callback): small rings fill while
// the consumer drains concurrently, so some pushes are dropped. Threads
// start in two waves (rings are made while a drain walks the registry) and
// the first wave exits before the last drain (its rings outlive it). Every
// accepted item arrives exactly once, in order within its thread, and every
// refused one is counted. Run under ThreadSanitizer (label tsan).
TEST(ThreadRings, ProducersThatNeverWaitLoseOnlyCountedItemsWhileDrainingConcurrently) {
  using Rings = ThreadRings<uint64_t, 16, DropsTag>;
  constexpr int kThreads = 6;
  constexpr uint64_t kItems = 20000;
  std::vector<std::vector<uint8_t>> accepted(kThreads, std::vector<uint8_t>(kItems, 0));
  std::atomic<int> done{0};
  auto produce = [&](int t) {
    for (uint64_t i = 0; i < kItems; ++i) {
      accepted[t][i] = Rings::Push(uint64_t(t) << 32 | i);
      if (i % 64 == 0) std::this_thread::yield();  // let the consumer in
    }
    done.fetch_add(1);
  };
  std::vector<std::vector<uint8_t>> seen(kThreads, std::vector<uint8_t>(kItems, 0));
  std::vector<int64_t> last(kThreads, -1);
  uint64_t drained = 0;
  auto take = [&](uint64_t v) {
    const int t = int(v >> 32);
    const uint64_t i = v & 0xffffffffu;
    ASSERT_LT(t, kThreads);
    ASSERT_LT(i, kItems);
    EXPECT_GT(int64_t(i), last[t]) << "out of order in thread " << t;
    last[t] = int64_t(i);
    EXPECT_EQ(seen[t][i]++, 0) << "item " << i << " of thread " << t << " twice";
    ++drained;
  };
  std::vector<std::thread> wave1, wave2;
  for (int t = 0; t < kThreads / 2; ++t) wave1.emplace_back(produce, t);
  while (done.load() < kThreads / 2) Rings::Drain(take);
  for (auto& th : wave1) th.join();  // these rings' owners are gone
  for (int t = kThreads / 2; t < kThreads; ++t) wave2.emplace_back(produce, t);
  while (done.load() < kThreads) Rings::Drain(take);
  for (auto& th : wave2) th.join();
  Rings::Drain(take);

  uint64_t pushed_ok = 0;
  for (int t = 0; t < kThreads; ++t)
    for (uint64_t i = 0; i < kItems; ++i) {
      pushed_ok += accepted[t][i];
      ASSERT_EQ(seen[t][i], accepted[t][i]) << "thread " << t << " item " << i;
    }
  EXPECT_EQ(drained, pushed_ok);
  EXPECT_EQ(Rings::dropped(), kThreads * kItems - pushed_ok);
  EXPECT_GT(pushed_ok, 0u);
}

}  // namespace
}  // namespace tracesmith::capture
