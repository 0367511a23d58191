// ThreadRings<T, kSize, Tag>: one fixed single-producer/single-consumer ring
// per application thread, drained by one consumer (the capture's writer).
//
// The producer's common path is a thread_local load, a relaxed load, a copy
// and a release store: no lock, no allocation, no syscall, so it can run
// inside a CUPTI callback. The producer's and the consumer's indices sit on
// lines of their own, and the producer reads the consumer's only when its
// cached copy says the ring may be full: a push does not wait for the line
// the writer last wrote (a transfer between cores, ~100 ns on a large CPU). A thread's ring is
// taken on its first push (the one slow path): the consumer keeps one made ahead (PrepareSpare, at
// each Drain), its pages touched once the type is in use, so a new thread neither allocates (a
// thread's first malloc makes it an arena: ~24 us) nor faults in the ring's pages (32 of them for a
// 128-KiB ring: 71-87 us median, 141 us at most, on the dev VM) inside the CUDA call that made it
// push; without a spare it
// allocates one whose slots are left untouched (faulted in by later pushes, a page at a time).
// A full ring drops the item and counts it. Rings are never freed: threads may outlive captures.
// Each <T, kSize, Tag> has its own registry (Tag tells users of the same T apart).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include "tracesmith/base/first_time_cost.h"

namespace tracesmith::capture {

template <typename T, uint32_t kSize, typename Tag>
class ThreadRings {
  static_assert((kSize & (kSize - 1)) == 0, "ring size must be a power of two");
  static_assert(std::is_trivially_copyable_v<T>, "items are copied in and out as bytes");

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
    std::memcpy(r->slots + (head % kSize) * sizeof(T), &item, sizeof(T));
    r->head.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer (one thread at a time): `fn(item)` for every item pushed so far;
  // then a spare ring made ready for the next new thread (PrepareSpare).
  template <typename Fn>
  static void Drain(Fn&& fn) {
    std::vector<Ring*> rings;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!rings_) rings_ = new std::vector<Ring*>();
      rings = *rings_;
      // Room for the next threads' rings: their first push appends without allocating.
      if (rings_->capacity() - rings_->size() < 4) rings_->reserve(2 * rings_->size() + 8);
    }
    T item;
    for (Ring* r : rings) {
      uint64_t tail = r->tail.load(std::memory_order_relaxed);
      uint64_t head = r->head.load(std::memory_order_acquire);
      for (; tail < head; ++tail) {
        std::memcpy(&item, r->slots + (tail % kSize) * sizeof(T), sizeof(T));
        fn(static_cast<const T&>(item));
      }
      r->tail.store(tail, std::memory_order_release);
    }
    PrepareSpare(!rings.empty());
  }

  static uint64_t spares_taken() { return spares_taken_.load(std::memory_order_relaxed); }

  static uint64_t dropped() { return dropped_.load(std::memory_order_relaxed); }

 private:
  // Consumer: a ring made ahead for a thread's first push, so that the push
  // neither allocates nor waits on a page fault. Its slots' pages are touched
  // when `in_use` (a thread has pushed: more may follow); else left to be
  // faulted in, so that a type never pushed costs only address space.
  static void PrepareSpare(bool in_use) {
    Ring* r = spare_.load(std::memory_order_acquire);
    if (!r) {
      r = new Ring;  // (the slots are not initialized: no page is touched yet)
      spare_touched_ = false;
      spare_.store(r, std::memory_order_release);
    }
    if (in_use && !spare_touched_) {
      // Touched only while no thread can hold it: taken back, touched, put back.
      if (Ring* mine = spare_.exchange(nullptr, std::memory_order_acquire)) {
        for (size_t at = 0; at < sizeof(mine->slots); at += 4096) mine->slots[at] = 0;
        mine->slots[sizeof(mine->slots) - 1] = 0;  // (the last page: slots need not start one)
        spare_touched_ = true;
        spare_.store(mine, std::memory_order_release);
      }
    }
  }
  struct Ring {
    alignas(64) std::atomic<uint64_t> head{0};  // written by the owning thread
    uint64_t cached_tail = 0;                   // the owner's last reading of tail
    alignas(64) std::atomic<uint64_t> tail{0};  // written by the consumer
    // kSize items, copied in and out as bytes (T is trivially copyable), not
    // initialized: a slot's page is touched when first written.
    alignas(64) unsigned char slots[kSize * sizeof(T)];
  };

  [[gnu::noinline, gnu::cold]] static Ring* NewRing() {
    FirstTimeWork first_time(FirstTimeKind::kRing);  // once per thread
    Ring* r = spare_.exchange(nullptr, std::memory_order_acquire);
    if (r)
      spares_taken_.fetch_add(1, std::memory_order_relaxed);
    else
      r = new Ring;
    std::lock_guard<std::mutex> lock(mu_);
    if (!rings_) rings_ = new std::vector<Ring*>();
    rings_->push_back(r);  // (room reserved by Drain: no allocation, as a rule)
    return r;
  }

  static inline std::mutex mu_;
  static inline std::vector<Ring*>* rings_ = nullptr;
  static inline std::atomic<uint64_t> dropped_{0};
  static inline std::atomic<Ring*> spare_{nullptr};
  static inline bool spare_touched_ = false;  // the consumer's
  static inline std::atomic<uint64_t> spares_taken_{0};
  static inline thread_local Ring* t_ring = nullptr;
};

}  // namespace tracesmith::capture
