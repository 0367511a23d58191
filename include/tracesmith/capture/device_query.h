// Device discovery through the CUDA driver, loaded with dlopen.
//
// `tracesmith devices` and the Device rows of a capture both use this. It
// needs no CUDA headers or libraries at build time, so it also works in a
// TraceSmith built without CUDA, and it says clearly when there is no driver
// (libcuda.so.1 missing) or no GPU (cuInit fails / zero devices).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::capture {

struct DeviceInfo {
  uint32_t ordinal = 0;
  std::string name;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-..."
  uint32_t cc_major = 0, cc_minor = 0;
  uint32_t sm_count = 0;
  uint64_t memory_bytes = 0;
  uint32_t core_clock_khz = 0;
  uint32_t memory_clock_khz = 0;
  uint32_t memory_bus_width_bits = 0;
  uint32_t l2_cache_bytes = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t max_shared_per_block = 0;
  uint32_t max_registers_per_block = 0;
  uint32_t pci_bus_id = 0;  // bus number
  uint32_t pci_domain_id = 0;
  uint32_t pci_device_id = 0;
};

struct DriverInfo {
  int driver_version = 0;      // e.g. 13000 for CUDA 13.0 (cuDriverGetVersion)
  uint32_t cupti_version = 0;  // CUPTI API version (cuptiGetVersion), 0 when not found
  std::vector<DeviceInfo> devices;
};

// The version of the CUDA runtime library the calling process has loaded
// (cudaRuntimeGetVersion of its libcudart.so.N, e.g. 13000), 0 when it has
// none loaded (not yet, or linked statically, as nvcc does by default).
// Loads nothing; call after the program initialised CUDA, outside CUPTI
// callbacks (the call is a runtime API call).
uint32_t QueryLoadedRuntimeVersion();

// Loads libcuda.so.1 and queries every device. kNotFound: no driver;
// kFailedPrecondition: driver present but cuInit failed (no GPU visible).
// When `init` is false, cuInit is not called (for use inside a process that
// already initialised CUDA).
StatusOr<DriverInfo> QueryDevices(bool init = true);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" of the driver's 16 UUID bytes.
std::string FormatGpuUuid(const unsigned char* bytes);

// "13.0" for 13000.
std::string CudaVersionString(int version);

}  // namespace tracesmith::capture
