#include "buffer_pool.h"

#include <cstdlib>

namespace tracesmith::capture {

void BufferPool::Configure(size_t cap_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  // At least two buffers so CUPTI can fill one while the writer drains another.
  buffer_bytes_ = kDefaultBufferBytes;
  while (buffer_bytes_ > (size_t{1} << 20) && cap_bytes / buffer_bytes_ < 2) buffer_bytes_ /= 2;
  max_buffers_ = cap_bytes / buffer_bytes_;
  if (max_buffers_ < 2) max_buffers_ = 2;
  free_.reserve(max_buffers_);
  closed_.store(false);
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
  // CUPTI requires 8-byte alignment.
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes_));
  if (!b) {
    std::lock_guard<std::mutex> lock(mu_);
    --allocated_;
    refused_.fetch_add(1, std::memory_order_relaxed);
  }
  return b;
}

void BufferPool::Release(uint8_t* buffer) {
  if (!buffer) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(buffer);  // capacity reserved: never reallocates
}

}  // namespace tracesmith::capture
