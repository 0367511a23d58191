#include "buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace tracesmith::capture {

void BufferPool::Configure(size_t cap_bytes, size_t buffer_bytes, bool prefault) {
  std::lock_guard<std::mutex> lock(mu_);
  // A later capture in the process: the free buffers of the last one are
  // unmapped (their size may not be this capture's); CUPTI holds none after
  // the last one's forced flush.
  for (uint8_t* b : free_) munmap(b, buffer_bytes_);
  allocated_ -= std::min(allocated_, free_.size());
  free_.clear();
  // At least two buffers so CUPTI can fill one while the writer drains another.
  buffer_bytes_ = buffer_bytes ? (buffer_bytes + 7) / 8 * 8 : kDefaultBufferBytes;
  while (buffer_bytes_ > (size_t{1} << 20) && cap_bytes / buffer_bytes_ < 2) buffer_bytes_ /= 2;
  max_buffers_ = cap_bytes / buffer_bytes_;
  if (max_buffers_ < 2) max_buffers_ = 2;
  free_.reserve(max_buffers_);
  prefault_ = prefault;
  closed_.store(false);
}

uint8_t* BufferPool::Allocate(bool touch) const {
  // Page-aligned (CUPTI needs 8) and zero; huge pages where the kernel
  // allows them (fewer faults and TLB entries).
  void* b =
      mmap(nullptr, buffer_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) return nullptr;
  (void)madvise(b, buffer_bytes_, MADV_HUGEPAGE);
  if (touch) std::memset(b, 0, buffer_bytes_);  // pages present now, not at CUPTI's writes
  return static_cast<uint8_t*>(b);
}

void BufferPool::Free(uint8_t* buffer) const {
  if (buffer) munmap(buffer, buffer_bytes_);
}

void BufferPool::Refill() {
  if (!prefault_ || closed_.load(std::memory_order_relaxed)) return;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // The last buffer under the cap is left to a request: reserving it here
      // while touching it could refuse a request that would have got it.
      if (free_.size() >= kReady || allocated_ + 1 >= max_buffers_) return;
      ++allocated_;  // reserved: Acquire cannot overshoot the cap meanwhile
    }
    uint8_t* b = Allocate(/*touch=*/true);
    std::lock_guard<std::mutex> lock(mu_);
    if (!b) {
      --allocated_;
      return;
    }
    free_.push_back(b);  // capacity reserved: never reallocates
  }
}

uint8_t* BufferPool::Acquire() {
  if (closed_.load(std::memory_order_relaxed)) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      uint8_t* b = free_.back();
      free_.pop_back();
      return b;
    }
    if (allocated_ < max_buffers_) {
      ++allocated_;
    } else {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  // No ready buffer: allocate here, untouched (touching would be the stall).
  uint8_t* b = Allocate(/*touch=*/false);
  if (!b) {
    std::lock_guard<std::mutex> lock(mu_);
    --allocated_;
    refused_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  allocated_on_request_.fetch_add(1, std::memory_order_relaxed);
  return b;
}

void BufferPool::Release(uint8_t* buffer) {
  if (!buffer) return;
  // All of it, not only the bytes CUPTI reported valid: CUPTI is told the
  // buffers come zeroed, and a byte it wrote past its valid size (padding, a
  // record begun and abandoned) would come back as a record.
  if (prefault_) std::memset(buffer, 0, buffer_bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(buffer);  // capacity reserved: never reallocates
}

}  // namespace tracesmith::capture
