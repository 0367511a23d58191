// ImageAllocator: host buffers for device-memory images (replay capture). Large buffers come
// straight from mmap with transparent huge pages requested: the
// device-to-host copy into a fresh buffer pays one page fault per page it
// touches, so 2 MiB pages cost 1/512 of the faults of 4 KiB ones. Elements
// are not value-initialised (the copy overwrites them).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace tracesmith::replay_capture {

template <typename T>
struct ImageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t(2) << 20;

  ImageAllocator() = default;
  template <typename U>
  ImageAllocator(const ImageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
    void* p =
        ::mmap(nullptr, RoundUp(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, RoundUp(bytes), MADV_HUGEPAGE);  // best effort: THP may be off
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge)
      ::operator delete(p);
    else
      ::munmap(p, RoundUp(bytes));
  }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialised: no zero fill
  }
  template <typename U, typename... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(static_cast<A&&>(a)...);
  }
  template <typename U>
  bool operator==(const ImageAllocator<U>&) const noexcept {
    return true;
  }

 private:
  static size_t RoundUp(size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }
};

using ImageBuffer = std::vector<uint8_t, ImageAllocator<uint8_t>>;

}  // namespace tracesmith::replay_capture
