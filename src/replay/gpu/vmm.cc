#include "vmm.h"

#include "tracesmith/cuda/call.h"

namespace tracesmith::replay::gpu {

namespace {
CUmemAllocationProp DeviceProp(CUdevice device) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}
}  // namespace

StatusOr<uint64_t> AllocationGranularity(CUdevice device) {
  CUmemAllocationProp prop = DeviceProp(device);
  size_t g = 0;
  CU_CALL(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return uint64_t(g);
}

StatusOr<std::unique_ptr<DeviceReservation>> DeviceReservation::At(uint64_t address,
                                                                   uint64_t size) {
  CUdeviceptr got = 0;
  CUresult r = cuMemAddressReserve(&got, size, 0, CUdeviceptr(address), 0);
  if (r != CUDA_SUCCESS || got != address) {
    if (r == CUDA_SUCCESS) cuMemAddressFree(got, size);
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    return FailedPrecondition(StrFormat(
        "cannot reserve device virtual addresses [0x%llx, 0x%llx) for replay: %s; the range is "
        "already taken in this process (by the driver or another allocation). Replay needs the "
        "addresses the captured program used",
        static_cast<unsigned long long>(address), static_cast<unsigned long long>(address + size),
        r == CUDA_SUCCESS ? StrFormat("the driver placed it at 0x%llx instead",
                                      static_cast<unsigned long long>(got))
                                .c_str()
                          : name));
  }
  return std::unique_ptr<DeviceReservation>(new DeviceReservation(address, size));
}

StatusOr<std::unique_ptr<DeviceReservation>> DeviceReservation::Anywhere(uint64_t size) {
  CUdeviceptr got = 0;
  CU_CALL(cuMemAddressReserve(&got, size, 0, 0, 0));
  return std::unique_ptr<DeviceReservation>(new DeviceReservation(uint64_t(got), size));
}

Status DeviceReservation::Back(CUdevice device, uint64_t address, uint64_t size) {
  if (address < address_ || address + size > address_ + size_)
    return Internal(StrFormat("[0x%llx, +0x%llx) is outside the reservation at 0x%llx",
                              static_cast<unsigned long long>(address),
                              static_cast<unsigned long long>(size),
                              static_cast<unsigned long long>(address_)));
  CUmemAllocationProp prop = DeviceProp(device);
  Backing b;
  b.address = address;
  b.size = size;
  CU_CALL(cuMemCreate(&b.handle, size, &prop, 0));
  backings_.push_back(b);
  CU_CALL(cuMemMap(CUdeviceptr(address), size, 0, b.handle, 0));
  backings_.back().mapped = true;
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CALL(cuMemSetAccess(CUdeviceptr(address), size, &access, 1));
  return OkStatus();
}

DeviceReservation::~DeviceReservation() {
  // Teardown errors cannot be reported from a destructor; the process is
  // about to reuse or drop the context either way.
  for (const Backing& b : backings_) {
    if (b.mapped) cuMemUnmap(CUdeviceptr(b.address), b.size);
    cuMemRelease(b.handle);
  }
  cuMemAddressFree(CUdeviceptr(address_), size_);
}

}  // namespace tracesmith::replay::gpu
