// ThreadRings<T, kSize, Tag>: one fixed single-producer/single-consumer ring
// per application thread, drained by one consumer (the capture's writer).
//
// The producer's common path is a thread_local load, a relaxed load, a copy
// and a release store: no lock, no allocation, no syscall, so it can run
// inside a CUPTI callback. The producer's and the consumer's indices sit on
// lines of their own, and the producer reads the consumer's only when its
// cached copy says the ring may be full: a push does not wait for the line
// the writer last wrote (a transfer between cores, ~100 ns on a large CPU). A thread's ring is made
// on its first push (the one slow path: an allocation and a lock). A full ring drops the item and
// counts it. Rings are never freed: threads may outlive captures. Each <T, kSize, Tag> has its own
// registry (Tag tells users of the same T apart).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tracesmith/base/first_time_cost.h"

namespace tracesmith::capture {

template <typename T, uint32_t kSize, typename Tag>
class ThreadRings {
  static_assert((kSize & (kSize - 1)) == 0, "ring size must be a power of two");

 public:
  // Producer: the calling thread's ring. False when it is full (dropped).
  static bool Push(const T& item) {
    Ring* r = t_ring;
    if (__builtin_expect(r == nullptr, 0)) r = t_ring = NewRing();
    uint64_t head = r->head.load(std::memory_order_relaxed);
    if (__builtin_expect(head - r->cached_tail >= kSize, 0)) {
      r->cached_tail = r->tail.load(std::memory_order_acquire);
      if (head - r->cached_tail >= kSize) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    }
    r->slots[head % kSize] = item;
    r->head.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer (one thread at a time): `fn(item)` for every item pushed so far.
  template <typename Fn>
  static void Drain(Fn&& fn) {
    std::vector<Ring*> rings;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (rings_) rings = *rings_;
    }
    for (Ring* r : rings) {
      uint64_t tail = r->tail.load(std::memory_order_relaxed);
      uint64_t head = r->head.load(std::memory_order_acquire);
      for (; tail < head; ++tail) fn(r->slots[tail % kSize]);
      r->tail.store(tail, std::memory_order_release);
    }
  }

  static uint64_t dropped() { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Ring {
    alignas(64) std::atomic<uint64_t> head{0};  // written by the owning thread
    uint64_t cached_tail = 0;                   // the owner's last reading of tail
    alignas(64) std::atomic<uint64_t> tail{0};  // written by the consumer
    alignas(64) T slots[kSize];
  };

  [[gnu::noinline]] static Ring* NewRing() {
    FirstTimeWork first_time;  // the ring's pages zeroed: once per thread
    Ring* r = new Ring();
    std::lock_guard<std::mutex> lock(mu_);
    if (!rings_) rings_ = new std::vector<Ring*>();
    rings_->push_back(r);
    return r;
  }

  static inline std::mutex mu_;
  static inline std::vector<Ring*>* rings_ = nullptr;
  static inline std::atomic<uint64_t> dropped_{0};
  static inline thread_local Ring* t_ring = nullptr;
};

}  // namespace tracesmith::capture
