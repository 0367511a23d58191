#include "tracesmith/replay/recorded_times.h"

#include <unordered_map>

#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::replay {

void FillRecordedTimes(const std::string& path, ReplayCapture* capture) {
  bool need = false;
  for (const LaunchRecord& l : capture->launches) need |= l.recorded_ns == 0 && l.correlation_id;
  if (!need) return;
  auto trace = format::ReadTraceFile(path);
  if (!trace.ok()) return;
  std::unordered_map<uint32_t, uint64_t> ns;
  for (const auto& k : trace->Rows<model::KernelEvent>())
    if (k.end_ns > k.start_ns) ns[k.correlation_id] = k.end_ns - k.start_ns;
  for (LaunchRecord& l : capture->launches)
    if (l.recorded_ns == 0 && l.correlation_id != 0)
      if (auto it = ns.find(l.correlation_id); it != ns.end()) l.recorded_ns = it->second;
}

}  // namespace tracesmith::replay
