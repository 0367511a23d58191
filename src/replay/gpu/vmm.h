// Device memory at fixed virtual addresses, for replay: a captured kernel's
// pointers (in parameters and inside device structs) are only valid at the
// addresses the program used, so replay maps memory exactly there.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/replay/address_ranges.h"

namespace tracesmith::replay::gpu {

// One reserved + mapped range [address, address + size), both multiples of
// the allocation granularity. Unmapped, released and freed on destruction.
class FixedMapping {
 public:
  // Fails with FailedPrecondition naming the address when the driver
  // cannot (or will not) place the reservation there: the range is taken.
  static StatusOr<std::unique_ptr<FixedMapping>> Create(CUdevice device, uint64_t address,
                                                        uint64_t size);
  // Wherever the driver puts it (relocated replay).
  static StatusOr<std::unique_ptr<FixedMapping>> CreateAnywhere(CUdevice device, uint64_t size);
  ~FixedMapping();
  FixedMapping(const FixedMapping&) = delete;
  FixedMapping& operator=(const FixedMapping&) = delete;
  FixedMapping(FixedMapping&&) = delete;
  FixedMapping& operator=(FixedMapping&&) = delete;

  uint64_t address() const { return address_; }
  uint64_t size() const { return size_; }

 private:
  FixedMapping(uint64_t address, uint64_t size) : address_(address), size_(size) {}
  Status Map(CUdevice device);  // after the reservation: create, map, allow access
  uint64_t address_, size_;
  bool reserved_ = false, mapped_ = false;
  CUmemGenericAllocationHandle handle_ = 0;
  bool created_ = false;
};

// Placeholders in the host address space for the ranges a replay will map,
// taken before cuInit (PROT_NONE, MAP_FIXED_NOREPLACE), so that nothing the
// process maps while starting lands there; each is released just before
// cuMemAddressReserve asks for its range. Ranges already taken are skipped.
// Measured on the H200 (2026-11-22, gpu/replay/va_probe.cc): the driver
// honours an address hint only inside VA regions it has already reserved
// for itself; a hint elsewhere gets a new region at an address of the
// driver's choosing. A captured cuMemAlloc address (inside the capturing
// process's driver region) is therefore usually not obtainable in a fresh
// process: replay then relocates (relocation.h).
class HostPlaceholders {
 public:
  HostPlaceholders() = default;
  ~HostPlaceholders();
  HostPlaceholders(const HostPlaceholders&) = delete;
  HostPlaceholders& operator=(const HostPlaceholders&) = delete;
  HostPlaceholders(HostPlaceholders&&) = delete;
  HostPlaceholders& operator=(HostPlaceholders&&) = delete;

  // Returns how many ranges were taken.
  size_t Hold(const std::vector<AddressRange>& ranges);
  // Releases every held placeholder overlapping [address, address + size).
  void Release(uint64_t address, uint64_t size);

 private:
  std::vector<AddressRange> held_;
};

// Granularity of cuMemCreate on `device` (2 MiB on Hopper).
StatusOr<uint64_t> AllocationGranularity(CUdevice device);

}  // namespace tracesmith::replay::gpu
