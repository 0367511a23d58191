// Device discovery with the driver API loaded by dlopen: no CUDA headers, so
// the signatures and attribute numbers used are declared here (they are part
// of the driver's stable ABI).
#include "tracesmith/capture/device_query.h"

#include <dlfcn.h>

namespace tracesmith::capture {
namespace {

using CuResult = int;
using CuInitFn = CuResult (*)(unsigned);
using CuDriverGetVersionFn = CuResult (*)(int*);
using CuDeviceGetCountFn = CuResult (*)(int*);
using CuDeviceGetFn = CuResult (*)(int*, int);
using CuDeviceGetNameFn = CuResult (*)(char*, int, int);
using CuDeviceTotalMemFn = CuResult (*)(size_t*, int);
using CuDeviceGetAttributeFn = CuResult (*)(int*, int, int);
using CuDeviceGetUuidFn = CuResult (*)(unsigned char*, int);
using CuGetErrorStringFn = CuResult (*)(CuResult, const char**);
using CuptiGetVersionFn = int (*)(uint32_t*);

// CUdevice_attribute values (cuda.h).
constexpr int kAttrMaxThreadsPerBlock = 1;
constexpr int kAttrMaxSharedPerBlock = 8;
constexpr int kAttrMaxRegistersPerBlock = 12;
constexpr int kAttrClockRate = 13;
constexpr int kAttrSmCount = 16;
constexpr int kAttrPciBusId = 33;
constexpr int kAttrPciDeviceId = 34;
constexpr int kAttrMemoryClockRate = 36;
constexpr int kAttrBusWidth = 37;
constexpr int kAttrL2Size = 38;
constexpr int kAttrPciDomainId = 50;
constexpr int kAttrCcMajor = 75;
constexpr int kAttrCcMinor = 76;

template <typename Fn>
Fn Sym(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

uint32_t QueryCuptiVersion() {
  const char* candidates[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12",
                              "/usr/local/cuda/lib64/libcupti.so",
                              "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"};
  for (const char* c : candidates) {
    void* lib = dlopen(c, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) lib = dlopen(c, RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    auto get = Sym<CuptiGetVersionFn>(lib, "cuptiGetVersion");
    uint32_t v = 0;
    if (get && get(&v) == 0) return v;
  }
  return 0;
}

}  // namespace

uint32_t QueryLoadedRuntimeVersion() {
  using GetVersionFn = int (*)(int*);
  for (const char* c :
       {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}) {
    void* lib = dlopen(c, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);  // loaded already, or nothing
    if (!lib) continue;
    auto get = Sym<GetVersionFn>(lib, "cudaRuntimeGetVersion");
    int v = 0;
    const bool ok = get && get(&v) == 0 && v > 0;
    dlclose(lib);  // drops the reference RTLD_NOLOAD took
    if (ok) return static_cast<uint32_t>(v);
  }
  return 0;
}

std::string FormatGpuUuid(const unsigned char* b) {
  static const char* kHex = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += kHex[b[i] >> 4];
    s += kHex[b[i] & 15];
  }
  return s;
}

std::string CudaVersionString(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

StatusOr<DriverInfo> QueryDevices(bool init) {
  // Never dlclose'd: the driver does not support being unloaded.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return NotFound(std::string("no NVIDIA driver: cannot load libcuda.so.1 (") + dlerror() + ")");
  auto cu_init = Sym<CuInitFn>(lib, "cuInit");
  auto get_version = Sym<CuDriverGetVersionFn>(lib, "cuDriverGetVersion");
  auto get_count = Sym<CuDeviceGetCountFn>(lib, "cuDeviceGetCount");
  auto get_device = Sym<CuDeviceGetFn>(lib, "cuDeviceGet");
  auto get_name = Sym<CuDeviceGetNameFn>(lib, "cuDeviceGetName");
  auto total_mem = Sym<CuDeviceTotalMemFn>(lib, "cuDeviceTotalMem_v2");
  auto get_attr = Sym<CuDeviceGetAttributeFn>(lib, "cuDeviceGetAttribute");
  auto get_uuid = Sym<CuDeviceGetUuidFn>(lib, "cuDeviceGetUuid_v2");
  if (!get_uuid) get_uuid = Sym<CuDeviceGetUuidFn>(lib, "cuDeviceGetUuid");
  auto error_string = Sym<CuGetErrorStringFn>(lib, "cuGetErrorString");
  if (!cu_init || !get_version || !get_count || !get_device || !get_name || !total_mem || !get_attr)
    return NotFound("libcuda.so.1 lacks basic driver API entry points (too old a driver?)");

  DriverInfo info;
  get_version(&info.driver_version);
  info.cupti_version = QueryCuptiVersion();
  if (init) {
    CuResult rc = cu_init(0);
    if (rc != 0) {
      const char* msg = nullptr;
      if (error_string) error_string(rc, &msg);
      return FailedPrecondition(StrFormat("no usable GPU: cuInit failed with CUDA error %d (%s)",
                                          rc, msg ? msg : "unknown"));
    }
  }
  int count = 0;
  if (CuResult rc = get_count(&count); rc != 0)
    return FailedPrecondition(StrFormat("cuDeviceGetCount failed with CUDA error %d", rc));
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (get_device(&dev, i) != 0) continue;
    DeviceInfo d;
    d.ordinal = static_cast<uint32_t>(i);
    char name[256] = {};
    get_name(name, sizeof(name) - 1, dev);
    d.name = name;
    unsigned char uuid[16] = {};
    if (get_uuid && get_uuid(uuid, dev) == 0) d.uuid = FormatGpuUuid(uuid);
    size_t mem = 0;
    total_mem(&mem, dev);
    d.memory_bytes = mem;
    auto attr = [&](int a) -> uint32_t {
      int v = 0;
      return get_attr(&v, a, dev) == 0 && v > 0 ? static_cast<uint32_t>(v) : 0;
    };
    d.cc_major = attr(kAttrCcMajor);
    d.cc_minor = attr(kAttrCcMinor);
    d.sm_count = attr(kAttrSmCount);
    d.core_clock_khz = attr(kAttrClockRate);
    d.memory_clock_khz = attr(kAttrMemoryClockRate);
    d.memory_bus_width_bits = attr(kAttrBusWidth);
    d.l2_cache_bytes = attr(kAttrL2Size);
    d.max_threads_per_block = attr(kAttrMaxThreadsPerBlock);
    d.max_shared_per_block = attr(kAttrMaxSharedPerBlock);
    d.max_registers_per_block = attr(kAttrMaxRegistersPerBlock);
    d.pci_bus_id = attr(kAttrPciBusId);
    d.pci_device_id = attr(kAttrPciDeviceId);
    d.pci_domain_id = attr(kAttrPciDomainId);
    info.devices.push_back(std::move(d));
  }
  return info;
}

}  // namespace tracesmith::capture
