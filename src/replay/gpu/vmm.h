// Device memory at fixed virtual addresses, for replay: a captured kernel's
// pointers (in parameters and inside device structs) are only valid at the
// addresses the program used, so replay maps memory exactly there.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::replay::gpu {

// One reserved + mapped range [address, address + size), both multiples of
// the allocation granularity. Unmapped, released and freed on destruction.
class FixedMapping {
 public:
  // Fails with FailedPrecondition naming the address when the driver
  // cannot (or will not) place the reservation there: the range is taken.
  static StatusOr<std::unique_ptr<FixedMapping>> Create(CUdevice device, uint64_t address,
                                                        uint64_t size);
  ~FixedMapping();
  FixedMapping(const FixedMapping&) = delete;
  FixedMapping& operator=(const FixedMapping&) = delete;
  FixedMapping(FixedMapping&&) = delete;
  FixedMapping& operator=(FixedMapping&&) = delete;

  uint64_t address() const { return address_; }
  uint64_t size() const { return size_; }

 private:
  FixedMapping(uint64_t address, uint64_t size) : address_(address), size_(size) {}
  uint64_t address_, size_;
  bool reserved_ = false, mapped_ = false;
  CUmemGenericAllocationHandle handle_ = 0;
  bool created_ = false;
};

// Granularity of cuMemCreate on `device` (2 MiB on Hopper).
StatusOr<uint64_t> AllocationGranularity(CUdevice device);

}  // namespace tracesmith::replay::gpu
