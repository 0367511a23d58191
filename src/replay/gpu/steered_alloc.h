// Device memory at a captured address through the driver's own allocator,
// for when cuMemAddressReserve cannot have the range.
//
// In a fresh process the driver reserves its cuMemAlloc pool at start-up;
// when a captured cuMemAlloc address lies inside that pool, the range is
// "taken" for cuMemAddressReserve, yet still free in the pool. The pool's
// placement and first-fit order are the same from process to process on the
// GPU machine, so asking cuMemAlloc for the same size, after "filler"
// allocations that cover any free gap below the target, returns the
// captured address. Each try is checked: an allocation that is not exactly
// at the target is freed and the launch fails with both reasons.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::replay::gpu {

class SteeredAllocation {
 public:
  static StatusOr<std::unique_ptr<SteeredAllocation>> Create(uint64_t address, uint64_t size);
  ~SteeredAllocation();
  SteeredAllocation(const SteeredAllocation&) = delete;
  SteeredAllocation& operator=(const SteeredAllocation&) = delete;
  SteeredAllocation(SteeredAllocation&&) = delete;
  SteeredAllocation& operator=(SteeredAllocation&&) = delete;

  size_t fillers() const { return fillers_.size(); }

 private:
  SteeredAllocation() = default;
  CUdeviceptr ptr_ = 0;
  std::vector<CUdeviceptr> fillers_;  // freed with the allocation
};

// The lines of /proc/self/maps that overlap [address, address + size), for
// error messages ("" when none).
std::string HostMappingsOverlapping(uint64_t address, uint64_t size);

}  // namespace tracesmith::replay::gpu
