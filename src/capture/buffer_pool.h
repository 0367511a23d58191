// BufferPool: CUPTI activity buffers under a hard memory cap (--buffer-mb).
//
// CUPTI asks for buffers on application threads when one fills; Acquire
// never blocks on the writer: it hands out a free buffer, allocates a new
// one while under the cap, or refuses (CUPTI then drops records and counts
// them). The lock is held for a vector push/pop only, and buffer requests
// happen once per buffer (8 MiB = tens of thousands of records).
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

  void Configure(size_t cap_bytes);
  // nullptr when the cap is reached or the pool is closed.
  uint8_t* Acquire();
  void Release(uint8_t* buffer);
  // Refuse all further requests (capture stopped).
  void Close() { closed_.store(true); }
  size_t buffer_bytes() const { return buffer_bytes_; }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  // Under the lock: read by the writer for its stats while a request that
  // passed the closed check before Close() may still be allocating.
  size_t allocated_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return allocated_ * buffer_bytes_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<uint8_t*> free_;
  size_t allocated_ = 0;
  size_t max_buffers_ = 0;
  size_t buffer_bytes_ = kDefaultBufferBytes;
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace tracesmith::capture
