// `tracesmith devices`: the GPUs the CUDA driver sees, with the versions of
// the driver and CUPTI. Works in builds without CUDA (the driver is dlopen'ed).
#include <cstdio>

#include "command.h"
#include "commands.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/capture/device_query.h"

namespace tracesmith::cli {
namespace {

int RunDevices() {
  auto info = capture::QueryDevices();
  if (!info.ok()) {
    std::fprintf(stderr, "tracesmith: %s\n", info.status().message().c_str());
    std::fprintf(stderr,
                 info.status().code() == StatusCode::kNotFound
                     ? "tracesmith: no NVIDIA driver is installed here: profiling needs one "
                       "(traces can still be read, analysed and exported)\n"
                     : "tracesmith: the driver is installed but no GPU is usable here\n");
    return kExitError;
  }
  std::printf("CUDA driver %s", capture::CudaVersionString(info->driver_version).c_str());
  if (info->cupti_version)
    std::printf(", CUPTI API %u", info->cupti_version);
  else
    std::printf(", CUPTI not found");
  std::printf("\n");
  if (info->devices.empty()) {
    std::printf("no GPU found by the driver\n");
    return kExitError;
  }
  for (const auto& d : info->devices) {
    std::printf("GPU %u: %s\n", d.ordinal, d.name.c_str());
    std::printf("  uuid:               %s\n", d.uuid.c_str());
    std::printf("  compute capability: %u.%u (sm_%u%u)\n", d.cc_major, d.cc_minor, d.cc_major,
                d.cc_minor);
    std::printf("  SMs:                %u\n", d.sm_count);
    std::printf("  memory:             %s, %u-bit bus, %u MHz\n",
                HumanBytes(d.memory_bytes).c_str(), d.memory_bus_width_bits,
                d.memory_clock_khz / 1000);
    std::printf("  SM clock:           %u MHz\n", d.core_clock_khz / 1000);
    std::printf("  L2 cache:           %s\n", HumanBytes(d.l2_cache_bytes).c_str());
    std::printf("  PCI:                %04x:%02x:%02x.0\n", d.pci_domain_id, d.pci_bus_id,
                d.pci_device_id);
  }
  return kExitOk;
}

}  // namespace

void AddDevicesCommand(Cmd& app, CommandList& commands) {
  auto* sub = app.add_subcommand("devices", "List the GPUs, driver and CUPTI versions");
  commands.emplace_back(sub, [] { return RunDevices(); });
}

}  // namespace tracesmith::cli
