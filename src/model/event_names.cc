#include "tracesmith/model/event_names.h"

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
std::string EventName(const Trace&, const ModuleLoadEvent& e) {
  return std::string(e.op == kModuleUnloaded ? "Module unload " : "Module load ") +
         std::to_string(e.module_id);
}
std::string EventName(const Trace&, const GraphLaunchEvent& e) {
  return "Graph launch " + std::to_string(e.graph_id);
}
std::string EventName(const Trace&, const OverheadEvent& e) {
  return "Overhead " + std::to_string(e.overhead_kind);
}
std::string EventName(const Trace&, const DropEvent& e) {
  return "Dropped " + std::to_string(e.count) + " records";
}

}  // namespace tracesmith::model
