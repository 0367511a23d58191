// BufferPool: CUPTI activity buffers under a cap, requested on application
// threads, released by the writer thread, closed when the capture stops.
#include "capture/buffer_pool.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace tracesmith::capture {
namespace {

TEST(BufferPool, HandsOutUpToTheCapThenRefusesAndReusesReleasedBuffers) {
  BufferPool pool;
  pool.Configure(size_t{6} << 20);  // 8 MiB does not fit twice: 2 MiB buffers, 3 of them
  EXPECT_EQ(pool.buffer_bytes(), size_t{2} << 20);
  std::set<uint8_t*> held;
  for (int i = 0; i < 3; ++i) {
    uint8_t* b = pool.Acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);  // CUPTI's alignment
    EXPECT_TRUE(held.insert(b).second);
  }
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 1u);
  EXPECT_EQ(pool.allocated_bytes(), size_t{6} << 20);
  uint8_t* back = *held.begin();
  pool.Release(back);
  EXPECT_EQ(pool.Acquire(), back);  // reused, not allocated
  EXPECT_EQ(pool.allocated_bytes(), size_t{6} << 20);
  pool.Close();
  pool.Release(back);
  EXPECT_EQ(pool.Acquire(), nullptr);  // closed: even a free buffer is refused
  EXPECT_EQ(pool.refused(), 1u);       // (a closed pool's refusals are not the cap's)
  for (uint8_t* b : held) pool.Free(b);
}

// Issue #41 item 2: the writer keeps kReady buffers allocated and touched,
// so CUPTI's requests on the program's threads neither allocate nor fault.
TEST(BufferPool, RefillKeepsTouchedBuffersReadyUnderTheCap) {
  BufferPool pool;
  pool.Configure(size_t{64} << 20);
  EXPECT_EQ(pool.buffer_bytes(), BufferPool::kDefaultBufferBytes);
  pool.Refill();
  EXPECT_EQ(pool.allocated_bytes(), BufferPool::kReady * BufferPool::kDefaultBufferBytes);
  std::vector<uint8_t*> held;
  for (size_t i = 0; i < BufferPool::kReady; ++i) held.push_back(pool.Acquire());
  EXPECT_EQ(pool.allocated_on_request(), 0u);                  // both were ready
  EXPECT_EQ(held[0][BufferPool::kDefaultBufferBytes - 1], 0);  // touched (zeroed)
  held.push_back(pool.Acquire());                              // none ready: allocated here
  EXPECT_EQ(pool.allocated_on_request(), 1u);
  pool.Refill();
  EXPECT_EQ(pool.allocated_bytes(), (3 + BufferPool::kReady) * BufferPool::kDefaultBufferBytes);
  // The cap holds: 64 MiB is 8 buffers; Refill stops one short of it however
  // often it runs (the last buffer is a request's: never refused for a refill).
  for (int i = 0; i < 3; ++i) held.push_back(pool.Acquire());
  for (int i = 0; i < 4; ++i) pool.Refill();
  EXPECT_EQ(pool.allocated_bytes(), size_t{56} << 20);
  held.push_back(pool.Acquire());  // the ready one
  held.push_back(pool.Acquire());  // the last: allocated for the request
  ASSERT_NE(held.back(), nullptr);
  EXPECT_EQ(pool.allocated_bytes(), size_t{64} << 20);
  EXPECT_EQ(pool.refused(), 0u);
  pool.Close();
  pool.Refill();  // closed: nothing more
  EXPECT_EQ(pool.allocated_bytes(), size_t{64} << 20);
  for (uint8_t* b : held) pool.Free(b);
}

// A second capture in one process (Session) may have another buffer size:
// the free buffers of the first are unmapped, not handed out with the new size.
TEST(BufferPool, ASecondConfigureDropsTheFreeBuffers) {
  BufferPool pool;
  pool.Configure(size_t{64} << 20);
  pool.Refill();
  uint8_t* held = pool.Acquire();
  EXPECT_EQ(pool.allocated_bytes(), 2 * BufferPool::kDefaultBufferBytes);
  pool.Configure(size_t{64} << 20, size_t{1} << 20);
  EXPECT_EQ(pool.allocated_bytes(), size_t{1} << 20);  // the one still held, counted in new size
  uint8_t* b = pool.Acquire();
  ASSERT_NE(b, nullptr);
  EXPECT_NE(b, held);
  EXPECT_EQ(pool.buffer_bytes(), size_t{1} << 20);
  pool.Free(b);
  munmap(held, BufferPool::kDefaultBufferBytes);
}

// What CUPTI wrote is zeroed when the writer releases the buffer: CUPTI
// is told the buffers come zeroed (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER).
TEST(BufferPool, ReleasedBuffersComeBackZeroed) {
  BufferPool pool;
  pool.Configure(size_t{16} << 20, size_t{1} << 20);
  ASSERT_TRUE(pool.zeroed());
  uint8_t* b = pool.Acquire();  // allocated here: zero pages
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b[12345], 0);
  std::memset(b, 0xab, 4096);  // CUPTI's records
  pool.Release(b);
  uint8_t* again = pool.Acquire();
  ASSERT_EQ(again, b);
  for (size_t i = 0; i < (size_t{1} << 20); i += 511) ASSERT_EQ(again[i], 0) << i;
  pool.Free(again);
}

// The stall sweep's knobs: a buffer size of its own, and no prefault.
TEST(BufferPool, BufferSizeAndNoPrefault) {
  BufferPool pool;
  pool.Configure(size_t{64} << 20, size_t{1} << 20, /*prefault=*/false);
  EXPECT_EQ(pool.buffer_bytes(), size_t{1} << 20);
  pool.Refill();
  EXPECT_EQ(pool.allocated_bytes(), 0u);  // nothing ahead of demand
  uint8_t* b = pool.Acquire();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(pool.allocated_on_request(), 1u);
  pool.Free(b);
}

// As in a capture: application threads request buffers (CUPTI's
// BufferRequested) and hand them, filled, to the writer (BufferCompleted
// queues them under a lock), which releases each after draining it and
// reads the pool's counters for its stats; then the pool is closed while
// the requests go on. No buffer is ever held by two threads at once (each
// holder stamps it and checks the stamp), the cap holds, and after the
// close every request is refused. Run under ThreadSanitizer (label tsan).
TEST(BufferPool, RequestsOnManyThreadsReleasesOnTheWriterAndACloseMeanwhile) {
  BufferPool pool;
  pool.Configure(size_t{8} << 20);  // 4 MiB buffers, 2 of them: requests are refused often
  const size_t cap_buffers = (size_t{8} << 20) / pool.buffer_bytes();
  constexpr int kThreads = 4;
  std::mutex completed_mu;
  std::deque<uint8_t*> completed;
  std::atomic<bool> closed{false}, stop{false};
  std::atomic<int> outstanding{0}, max_outstanding{0}, after_close{0};
  std::atomic<uint64_t> acquired{0};

  std::vector<std::thread> app;
  for (int t = 0; t < kThreads; ++t) {
    app.emplace_back([&, t] {
      const uint64_t stamp = 0x5eed0000u + uint64_t(t);
      while (!stop.load()) {
        const bool was_closed = closed.load();
        uint8_t* b = pool.Acquire();
        if (!b) {
          std::this_thread::yield();
          continue;
        }
        if (was_closed) after_close.fetch_add(1);
        acquired.fetch_add(1);
        const int n = outstanding.fetch_add(1) + 1;
        for (int m = max_outstanding.load();
             n > m && !max_outstanding.compare_exchange_weak(m, n);) {
        }
        // The records: a stamp at each end, read back after a yield.
        std::memcpy(b, &stamp, sizeof(stamp));
        std::memcpy(b + pool.buffer_bytes() - sizeof(stamp), &stamp, sizeof(stamp));
        std::this_thread::yield();
        uint64_t head = 0, tail = 0;
        std::memcpy(&head, b, sizeof(head));
        std::memcpy(&tail, b + pool.buffer_bytes() - sizeof(tail), sizeof(tail));
        EXPECT_EQ(head, stamp);
        EXPECT_EQ(tail, stamp);
        std::lock_guard<std::mutex> lock(completed_mu);
        completed.push_back(b);
      }
    });
  }
  std::thread writer([&] {
    uint64_t last_refused = 0;
    for (;;) {
      const bool last = stop.load();
      std::deque<uint8_t*> batch;
      {
        std::lock_guard<std::mutex> lock(completed_mu);
        batch.swap(completed);
      }
      for (uint8_t* b : batch) {
        outstanding.fetch_sub(1);
        pool.Release(b);
      }
      // The writer's stats, read while requests go on.
      EXPECT_LE(pool.allocated_bytes(), size_t{8} << 20);
      EXPECT_GE(pool.refused(), last_refused);
      last_refused = pool.refused();
      if (last) break;
      std::this_thread::yield();
    }
  });
  while (acquired.load() < 2000) std::this_thread::yield();
  pool.Close();
  closed.store(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // requests on a closed pool
  stop.store(true);
  for (auto& th : app) th.join();
  writer.join();

  EXPECT_EQ(after_close.load(), 0);  // a request that began after Close got nothing
  EXPECT_LE(size_t(max_outstanding.load()), cap_buffers);
  EXPECT_EQ(pool.allocated_bytes(), cap_buffers * pool.buffer_bytes());
  EXPECT_GT(pool.refused(), 0u);
  EXPECT_EQ(outstanding.load(), 0);
  // Every buffer came back to the pool exactly once: open it again (the
  // next capture) and take them all, then free them (the pool never does).
  pool.Configure(size_t{8} << 20);
  std::set<uint8_t*> back;
  while (uint8_t* b = pool.Acquire()) EXPECT_TRUE(back.insert(b).second);
  EXPECT_EQ(back.size(), cap_buffers);
  EXPECT_EQ(pool.allocated_bytes(), cap_buffers * pool.buffer_bytes());
  for (uint8_t* b : back) pool.Free(b);
}

// The writer reads the pool's counters for its stats (WriteFinalStats) while
// application threads may still be allocating: a request that passed the
// closed check before Close() allocates after it.
TEST(BufferPool, CountersAreReadWhileBuffersAreAllocated) {
  BufferPool pool;
  pool.Configure(size_t{64} << 20);  // 8 buffers of 8 MiB
  std::atomic<bool> reading{false}, stop{false};
  std::thread writer([&] {
    size_t last = 0;
    while (!stop.load()) {
      const size_t bytes = pool.allocated_bytes();
      EXPECT_GE(bytes, last);
      last = bytes;
      (void)pool.refused();
      reading.store(true);
    }
  });
  while (!reading.load()) std::this_thread::yield();
  std::vector<uint8_t*> held[2];
  std::thread app[2];
  for (int t = 0; t < 2; ++t)
    app[t] = std::thread([&, t] {
      while (uint8_t* b = pool.Acquire()) held[t].push_back(b);
    });
  for (auto& th : app) th.join();
  stop.store(true);
  writer.join();
  EXPECT_EQ(held[0].size() + held[1].size(), 8u);
  EXPECT_EQ(pool.allocated_bytes(), size_t{64} << 20);
  EXPECT_EQ(pool.refused(), 2u);
  for (auto& h : held)
    for (uint8_t* b : h) pool.Free(b);
}

}  // namespace
}  // namespace tracesmith::capture
