#include "tracesmith/replay/recorded_times.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::replay {

void FillRecordedTimes(const std::string& path, format::ReplayCapture* capture) {
  bool need = false;
  for (const format::LaunchRecord& l : capture->launches)
    need |= l.recorded_ns == 0 && l.correlation_id;
  for (const format::GraphLaunchRecord& g : capture->graphs)
    need |= g.recorded_ns == 0 && g.correlation_id;
  if (!need) return;
  auto trace = format::ReadTraceFile(path);
  if (!trace.ok()) return;
  std::unordered_map<uint32_t, uint64_t> ns;
  for (const auto& k : trace->Rows<model::KernelEvent>())
    if (k.end_ns > k.start_ns) ns[k.correlation_id] = k.end_ns - k.start_ns;
  for (format::LaunchRecord& l : capture->launches)
    if (l.recorded_ns == 0 && l.correlation_id != 0)
      if (auto it = ns.find(l.correlation_id); it != ns.end()) l.recorded_ns = it->second;
  // A graph launch: the extent of the kernel, memset and memcpy rows that
  // carry its cuGraphLaunch's correlation id (from the first start to the
  // last end: gaps between nodes count, as they did in the program), graph
  // nodes only (graph_id set). Not the GraphLaunchEvent row, whose times are
  // the host call's, nor the replay capture's own copies of the memory
  // before and after, which CUPTI gives the same correlation id: both span
  // milliseconds for a 10 us graph (68 ms and 8.6 ms on the H200).
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> extent;
  for (const format::GraphLaunchRecord& g : capture->graphs)
    if (g.recorded_ns == 0 && g.correlation_id) extent[g.correlation_id] = {UINT64_MAX, 0};
  if (extent.empty()) return;
  auto widen = [&](uint32_t corr, uint32_t graph_id, uint64_t start, uint64_t end) {
    auto it = extent.find(corr);
    if (it == extent.end() || graph_id == 0 || end <= start) return;
    it->second.first = std::min(it->second.first, start);
    it->second.second = std::max(it->second.second, end);
  };
  for (const auto& k : trace->Rows<model::KernelEvent>())
    widen(k.correlation_id, k.graph_id, k.start_ns, k.end_ns);
  for (const auto& m : trace->Rows<model::MemcpyEvent>())
    widen(m.correlation_id, m.graph_id, m.start_ns, m.end_ns);
  for (const auto& m : trace->Rows<model::MemsetEvent>())
    widen(m.correlation_id, m.graph_id, m.start_ns, m.end_ns);
  for (format::GraphLaunchRecord& g : capture->graphs)
    if (auto it = extent.find(g.correlation_id);
        g.recorded_ns == 0 && it != extent.end() && it->second.second > it->second.first)
      g.recorded_ns = it->second.second - it->second.first;
}

}  // namespace tracesmith::replay
