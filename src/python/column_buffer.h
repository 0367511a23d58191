// ColumnBuffer: the bytes of one NumPy column, grown without zero-filling and,
// once large, in transparent huge pages.
//
// A 10 M-kernel trace loads into ~580 MB of columns. In 4 KiB pages that is
// ~140 k first-touch page faults, which cost about a second of system time on
// a virtual machine (8 µs each measured on a 2-core VM, 2026-11-28): more than
// decoding the file. Buffers of kHugeBytes or more are therefore mapped on a
// 2 MiB boundary with MADV_HUGEPAGE (honoured when the kernel's THP mode is
// "madvise" or "always"; a no-op under "never"), 512x fewer faults; smaller
// ones stay on the heap, where a huge page would cost more than it saves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracesmith::python {

class ColumnBuffer {
 public:
  static constexpr size_t kHugeBytes = size_t(4) << 20;

  ColumnBuffer() = default;
  ColumnBuffer(const ColumnBuffer&) = delete;
  ColumnBuffer& operator=(const ColumnBuffer&) = delete;
  ~ColumnBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // Room for `bytes` without moving the data again. Throws std::bad_alloc.
  void Reserve(size_t bytes);
  // `bytes` long; new bytes are left as they are (the caller writes them).
  // Grows by at least half its size when it must grow.
  void Resize(size_t bytes);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t mapped_ = 0;  // bytes mapped (mmap) for a huge buffer; 0: on the heap
};

}  // namespace tracesmith::python
