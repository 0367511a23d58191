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

// A device virtual-address reservation [address, address + size) and the
// device memory backing parts of it (multiples of the allocation
// granularity). Unmapped, released and freed on destruction.
class DeviceReservation {
 public:
  // Fails with FailedPrecondition naming the range when the driver cannot
  // (or will not) place the reservation there: the range is taken.
  static StatusOr<std::unique_ptr<DeviceReservation>> At(uint64_t address, uint64_t size);
  // Wherever the driver puts it (relocated replay).
  static StatusOr<std::unique_ptr<DeviceReservation>> Anywhere(uint64_t size);
  ~DeviceReservation();
  DeviceReservation(const DeviceReservation&) = delete;
  DeviceReservation& operator=(const DeviceReservation&) = delete;
  DeviceReservation(DeviceReservation&&) = delete;
  DeviceReservation& operator=(DeviceReservation&&) = delete;

  // Creates device memory on `device`, maps it at [address, address + size)
  // (inside the reservation) and allows read/write access.
  Status Back(CUdevice device, uint64_t address, uint64_t size);

  uint64_t address() const { return address_; }
  uint64_t size() const { return size_; }

 private:
  DeviceReservation(uint64_t address, uint64_t size) : address_(address), size_(size) {}
  struct Backing {
    uint64_t address = 0, size = 0;
    CUmemGenericAllocationHandle handle = 0;
    bool mapped = false;
  };
  uint64_t address_, size_;
  std::vector<Backing> backings_;
};

// The CUDA driver's VA chunk. Measured on the H200 (2026-11-22,
// gpu/replay/va_steer_probe.cc): for an address hint outside its own
// regions the driver rounds the hint up to a 32 MiB boundary and the size
// up to 32 MiB and passes both to mmap, so a reservation asked for at a
// free, 32 MiB-aligned address is placed there (2 MiB to 1 GiB tried); an
// unaligned hint lands on the next boundary. Replay therefore reserves
// chunk-aligned spans (GroupForReservation, address_ranges.h). Host
// PROT_NONE placeholders over those spans, taken before cuInit and
// released just before reserving, made the driver skip them (it steps the
// hint to the next free chunk), so replay takes none.
inline constexpr uint64_t kDriverVaChunk = uint64_t(32) << 20;

// Granularity of cuMemCreate on `device` (2 MiB on Hopper).
StatusOr<uint64_t> AllocationGranularity(CUdevice device);

}  // namespace tracesmith::replay::gpu
