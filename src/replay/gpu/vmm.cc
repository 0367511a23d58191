#include "vmm.h"

#include <sys/mman.h>

#include "cu_call.h"

namespace tracesmith::replay::gpu {

Status CuError(CUresult r, const char* call, const char* file, int line) {
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  return Internal(StrFormat("%s failed: %s (%s) at %s:%d", call, name ? name : "?",
                            text ? text : "unknown error", file, line));
}

namespace {
CUmemAllocationProp DeviceProp(CUdevice device) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}
}  // namespace

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000  // Linux 4.17+; older kernels treat it as a hint
#endif

size_t HostPlaceholders::Hold(const std::vector<AddressRange>& ranges) {
  for (const AddressRange& r : ranges) {
    void* want = reinterpret_cast<void*>(r.address);
    void* got = ::mmap(want, r.size, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) continue;
    if (got != want) {  // a kernel without MAP_FIXED_NOREPLACE placed it elsewhere
      ::munmap(got, r.size);
      continue;
    }
    held_.push_back(r);
  }
  return held_.size();
}

void HostPlaceholders::Release(uint64_t address, uint64_t size) {
  for (size_t i = 0; i < held_.size();) {
    const AddressRange& h = held_[i];
    if (h.address < address + size && address < h.address + h.size) {
      ::munmap(reinterpret_cast<void*>(h.address), h.size);  // exactly our own mapping
      held_[i] = held_.back();
      held_.pop_back();
    } else {
      ++i;
    }
  }
}

HostPlaceholders::~HostPlaceholders() {
  for (const AddressRange& h : held_) ::munmap(reinterpret_cast<void*>(h.address), h.size);
}

StatusOr<uint64_t> AllocationGranularity(CUdevice device) {
  CUmemAllocationProp prop = DeviceProp(device);
  size_t g = 0;
  CU_CALL(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return uint64_t(g);
}

StatusOr<std::unique_ptr<FixedMapping>> FixedMapping::Create(CUdevice device, uint64_t address,
                                                             uint64_t size) {
  std::unique_ptr<FixedMapping> m(new FixedMapping(address, size));
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
  m->reserved_ = true;
  RETURN_IF_ERROR(m->Map(device));
  return m;
}

StatusOr<std::unique_ptr<FixedMapping>> FixedMapping::CreateAnywhere(CUdevice device,
                                                                     uint64_t size) {
  CUdeviceptr got = 0;
  CU_CALL(cuMemAddressReserve(&got, size, 0, 0, 0));
  std::unique_ptr<FixedMapping> m(new FixedMapping(uint64_t(got), size));
  m->reserved_ = true;
  RETURN_IF_ERROR(m->Map(device));
  return m;
}

Status FixedMapping::Map(CUdevice device) {
  CUmemAllocationProp prop = DeviceProp(device);
  CU_CALL(cuMemCreate(&handle_, size_, &prop, 0));
  created_ = true;
  CU_CALL(cuMemMap(CUdeviceptr(address_), size_, 0, handle_, 0));
  mapped_ = true;
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CALL(cuMemSetAccess(CUdeviceptr(address_), size_, &access, 1));
  return OkStatus();
}

FixedMapping::~FixedMapping() {
  // Teardown errors cannot be reported from a destructor; the process is
  // about to reuse or drop the context either way.
  if (mapped_) cuMemUnmap(CUdeviceptr(address_), size_);
  if (created_) cuMemRelease(handle_);
  if (reserved_) cuMemAddressFree(CUdeviceptr(address_), size_);
}

}  // namespace tracesmith::replay::gpu
