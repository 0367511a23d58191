#include "tracesmith/model/event_names.h"

#include <cstdio>
#include <iterator>

namespace tracesmith::model {

std::string EventName(const Trace& t, const KernelEvent& e) {
  std::string_view d = t.strings.Get(e.demangled_id);
  return std::string(d.empty() ? t.strings.Get(e.name_id) : d);
}
std::string EventName(const Trace&, const MemcpyEvent& e) {
  return std::string("Memcpy ") + CopyKindName(e.copy_kind);
}
std::string EventName(const Trace&, const MemsetEvent& e) {
  return std::string("Memset (") + MemoryKindName(e.memory_kind) + ")";
}
std::string EventName(const Trace&, const SyncEvent& e) {
  return std::string("Sync ") + SyncTypeName(e.sync_type);
}
std::string EventName(const Trace& t, const ApiEvent& e) {
  return std::string(t.strings.Get(e.name_id));
}
std::string EventName(const Trace& t, const NvtxRangeEvent& e) {
  return std::string(t.strings.Get(e.name_id));
}
std::string EventName(const Trace& t, const NvtxMarkerEvent& e) {
  return std::string(t.strings.Get(e.name_id));
}
std::string EventName(const Trace&, const MemoryEvent& e) {
  static constexpr const char* kVerbs[] = {"Alloc",         "Alloc",    "Free",      "VMM create",
                                           "VMM release",   "VMM map",  "VMM unmap", "VMM reserve",
                                           "VMM unreserve", "IPC open", "IPC close"};
  const char* verb = e.op < std::size(kVerbs) ? kVerbs[e.op] : "Memory op";
  return std::string(verb) + " " + MemoryKindName(e.memory_kind);
}
std::string EventName(const Trace& t, const CounterEvent& e) {
  return std::string(t.strings.Get(e.name_id));
}
std::string EventName(const Trace& t, const AppCounterEvent& e) {
  return std::string(t.strings.Get(e.name_id));
}
std::string EventName(const Trace& t, const AppEvent& e) {
  return std::string(t.strings.Get(e.name_id));
}
std::string EventName(const Trace& t, const NvtxPayloadEvent& e) {
  return std::string(t.strings.Get(e.text_id));
}
std::string EventName(const Trace&, const ModuleLoadEvent& e) {
  return std::string(e.op == kModuleUnloaded ? "Module unload " : "Module load ") +
         std::to_string(e.module_id);
}
std::string EventName(const Trace&, const GraphLaunchEvent& e) {
  return "Graph launch " + std::to_string(e.graph_id);
}
const char* OverheadKindName(uint32_t kind) {
  // CUpti_ActivityOverheadKind (cupti_activity.h, CUDA 13): the driver's
  // compiler, then CUPTI's own kinds at multiples of 1 << 16.
  static constexpr const char* kCupti[] = {nullptr,
                                           "buffer flush",
                                           "instrumentation",
                                           "resource",
                                           "runtime-triggered module loading",
                                           "lazy function loading",
                                           "command buffer full",
                                           "activity buffer request",
                                           "UVM activity init"};
  if (kind == kOverheadPcSamplingDrain) return "PC sampling drain";
  if (kind == 0) return "unknown";
  if (kind == 1) return "driver compiler";
  if ((kind & 0xffff) != 0) return nullptr;
  const uint32_t k = kind >> 16;
  return k < std::size(kCupti) ? kCupti[k] : nullptr;
}

std::string EventName(const Trace&, const OverheadEvent& e) {
  const char* name = OverheadKindName(e.overhead_kind);
  return name ? std::string("Overhead: ") + name : "Overhead " + std::to_string(e.overhead_kind);
}
std::string EventName(const Trace&, const DropEvent& e) {
  return "Dropped " + std::to_string(e.count) + " records";
}

std::string_view ShortStallName(std::string_view name) {
  for (std::string_view prefix : {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"})
    if (name.starts_with(prefix)) return name.substr(prefix.size());
  return name;
}

bool IsCountedStall(std::string_view name) {
  if (name.ends_with("_not_issued")) return false;
  if (name.starts_with("smsp__pcsamp_"))
    return name.starts_with("smsp__pcsamp_warps_issue_stalled_");
  return true;
}

std::string EventName(const Trace& t, const PcSampleEvent& e) {
  char offset[24];
  std::snprintf(offset, sizeof offset, " +0x%x: ", e.pc_offset);
  return std::string(t.strings.Get(e.function_id)) + offset +
         std::string(ShortStallName(t.strings.Get(e.stall_id)));
}

std::string EventName(const Trace& t, const KernelTimeoutEvent& e) {
  return "Kernel timeout: " +
         std::string(t.strings.Get(e.demangled_id ? e.demangled_id : e.function_id));
}

const GpuMetric* FindGpuMetric(const Trace& t, uint32_t pid, uint32_t metric_id) {
  for (const GpuMetric& m : t.Rows<GpuMetric>())
    if (m.pid == pid && m.metric_id == metric_id) return &m;
  return nullptr;
}

std::string EventName(const Trace& t, const GpuMetricSample& e) {
  const GpuMetric* m = FindGpuMetric(t, e.pid, e.metric_id);
  if (m == nullptr) return "GPU metric " + std::to_string(e.metric_id);
  std::string name(t.strings.Get(m->name_id));
  if (!m->label_id) return name;
  return std::string(t.strings.Get(m->label_id)) + " (" + name + ")";
}

}  // namespace tracesmith::model
