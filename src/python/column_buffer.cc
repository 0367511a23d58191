#include "column_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace tracesmith::python {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// `bytes` (a multiple of kHugePage) of anonymous memory starting on a 2 MiB
// boundary, advised as huge pages.
uint8_t* MapHuge(size_t bytes) {
  void* p =
      mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto* raw = static_cast<uint8_t*>(p);
  auto* start = reinterpret_cast<uint8_t*>(RoundUp(reinterpret_cast<uintptr_t>(raw), kHugePage));
  // Unmap the unaligned head and the tail beyond `bytes`.
  if (start > raw) munmap(raw, size_t(start - raw));
  const size_t tail = size_t(raw + bytes + kHugePage - (start + bytes));
  if (tail > 0) munmap(start + bytes, tail);
  // Best effort: without THP the buffer works in small pages.
  (void)madvise(start, bytes, MADV_HUGEPAGE);
  return start;
}

}  // namespace

ColumnBuffer::~ColumnBuffer() {
  if (mapped_ != 0)
    munmap(data_, mapped_);
  else
    std::free(data_);
}

void ColumnBuffer::Reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  if (bytes < kHugeBytes) {
    void* p = std::realloc(data_, bytes);
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<uint8_t*>(p);
    capacity_ = bytes;
    return;
  }
  const size_t want = RoundUp(bytes, kHugePage);
  uint8_t* fresh = MapHuge(want);
  if (size_ > 0) std::memcpy(fresh, data_, size_);
  if (mapped_ != 0)
    munmap(data_, mapped_);
  else
    std::free(data_);
  data_ = fresh;
  capacity_ = mapped_ = want;
}

void ColumnBuffer::Resize(size_t bytes) {
  if (bytes > capacity_)
    Reserve(bytes > capacity_ + capacity_ / 2 ? bytes : capacity_ + capacity_ / 2);
  size_ = bytes;
}

}  // namespace tracesmith::python
