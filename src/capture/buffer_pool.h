// BufferPool: CUPTI activity buffers under a hard memory cap (--buffer-mb).
//
// CUPTI asks for buffers on application threads when one fills; Acquire
// never blocks on the writer: it hands out a free buffer, allocates a new
// one while under the cap, or refuses (CUPTI then drops records and counts
// them). The lock is held for a vector push/pop only.
//
// Buffers are handed out zeroed, so that CUPTI need not zero them itself
// (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER): by default CUPTI zeroes
// each buffer it gets inside the program's CUDA call that asked for it —
// 8 MiB at a time, the millisecond "activity buffer request" stalls of
// issue #41 item 2. Here the writer thread zeroes what CUPTI wrote when it
// releases a drained buffer, and keeps kReady buffers allocated, zeroed and
// touched ahead of demand (Refill), so neither the request nor CUPTI's
// record writes take a page fault on the program's threads. Buffers are
// anonymous mappings: one Acquire must allocate itself (none ready) gets
// zero pages without touching them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tracesmith::capture {

class BufferPool {
 public:
  // 8 MiB: CUPTI recommends 1-10 MB buffers; fewer requests on the launch path.
  static constexpr size_t kDefaultBufferBytes = size_t{8} << 20;
  // Free buffers the writer keeps ready (allocated and touched).
  static constexpr size_t kReady = 2;

  // `buffer_bytes` 0: the default; `prefault` false: buffers are allocated
  // on demand, untouched, and not zeroed on release (CUPTI zeroes them: the
  // behaviour before, for comparisons; zeroed() says which).
  void Configure(size_t cap_bytes, size_t buffer_bytes = 0, bool prefault = true);
  bool zeroed() const { return prefault_; }
  // nullptr when the cap is reached or the pool is closed.
  uint8_t* Acquire();
  // A drained buffer back; zeroed here, all of it, when zeroed().
  void Release(uint8_t* buffer);
  // Unmaps a buffer the pool handed out (tests; a capture keeps its buffers).
  void Free(uint8_t* buffer) const;
  // Off the program's threads (the writer): tops the free list up to kReady
  // touched buffers while under the cap, the last buffer under it left to a
  // request.
  void Refill();
  // Refuse all further requests (capture stopped).
  void Close() { closed_.store(true); }
  size_t buffer_bytes() const { return buffer_bytes_; }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  // Buffers Acquire had to allocate on a program thread (none were ready).
  uint64_t allocated_on_request() const {
    return allocated_on_request_.load(std::memory_order_relaxed);
  }
  // Under the lock: read by the writer for its stats while a request that
  // passed the closed check before Close() may still be allocating.
  size_t allocated_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return allocated_ * buffer_bytes_;
  }

 private:
  uint8_t* Allocate(bool touch) const;

  mutable std::mutex mu_;
  std::vector<uint8_t*> free_;
  size_t allocated_ = 0;
  size_t max_buffers_ = 0;
  size_t buffer_bytes_ = kDefaultBufferBytes;
  bool prefault_ = true;
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> allocated_on_request_{0};
};

}  // namespace tracesmith::capture
