// Text summary of a schedule emulation. Worded as emulation / dry-run: no
// GPU work ran.
#include <algorithm>
#include <numeric>

#include "tracesmith/base/file_util.h"
#include "tracesmith/replay/emulator.h"

namespace tracesmith::replay {

std::string FormatEmulation(const analysis::CompactTrace& trace, const EmulationOptions& options,
                            const EmulationResult& r, size_t schedule_rows) {
  std::string out = "Schedule emulation (dry-run on the CPU; no GPU work was run)\n";
  std::string whatif;
  for (const KernelScale& k : options.scale_kernels)
    whatif += StrFormat(" scale-kernel '%s'=%g;", k.pattern.c_str(), k.factor);
  if (options.remove_sync) whatif += " remove-sync;";
  if (options.streams) whatif += StrFormat(" streams %u;", options.streams);
  out +=
      "  what-if:" + (whatif.empty() ? std::string(" none (recorded durations)") : whatif) + "\n";
  out +=
      StrFormat("  nodes: %zu GPU ops, %zu API calls, %zu sync records; launch latency floor %s\n",
                trace.ops().size(), trace.calls().size(), trace.syncs().size(),
                HumanDuration(r.launch_floor_ns).c_str());
  if (!options.scale_kernels.empty())
    out += StrFormat("  kernels scaled: %llu\n", static_cast<unsigned long long>(r.kernels_scaled));
  if (options.remove_sync)
    out += StrFormat("  synchronize waits removed: %llu\n",
                     static_cast<unsigned long long>(r.syncs_removed));
  out += "\n  stream                      ops   busy recorded  busy predicted   predicted span\n";
  for (const EmulatedStream& s : r.streams) {
    std::string name = options.streams
                           ? StrFormat("pid %u dev %u vstream %u", s.pid, s.device, s.stream)
                           : StrFormat("pid %u dev %u stream %u", s.pid, s.device, s.stream);
    out += StrFormat("  %-26s %6llu %15s %15s   %s .. %s\n", name.c_str(),
                     static_cast<unsigned long long>(s.ops),
                     HumanDuration(s.recorded_busy_ns).c_str(), HumanDuration(s.busy_ns).c_str(),
                     HumanDuration(uint64_t(std::max<int64_t>(0, s.first_start))).c_str(),
                     HumanDuration(uint64_t(std::max<int64_t>(0, s.last_end))).c_str());
  }
  std::vector<EmulationResult::ScheduledOp> rows;
  if (schedule_rows > 0 && !r.schedule.empty()) {
    rows.assign(r.schedule.begin(),
                r.schedule.begin() + std::min(schedule_rows, r.schedule.size()));
  } else if (schedule_rows > 0 && !r.op_start.empty()) {
    std::vector<uint32_t> order(r.op_start.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return r.op_start[a] < r.op_start[b]; });
    for (size_t k = 0; k < order.size() && k < schedule_rows; ++k)
      rows.push_back({order[k], r.op_start[order[k]], r.op_end[order[k]]});
  }
  if (!rows.empty()) {
    out += StrFormat("\n  predicted schedule (first %zu ops; times from the predicted start)\n",
                     rows.size());
    for (const auto& row : rows) {
      const analysis::GpuOp& op = trace.ops()[row.op];
      const auto& lane = trace.lanes()[op.lane()];
      std::string label = op.kind() == analysis::OpKind::kKernel
                              ? std::string(trace.String(op.name_id))
                              : analysis::OpKindName(op.kind());
      if (label.size() > 60) label = label.substr(0, 57) + "...";
      out += StrFormat("  %12s %12s  dev %u stream %u  %s\n",
                       HumanDuration(uint64_t(row.start - r.predicted_begin)).c_str(),
                       HumanDuration(uint64_t(row.end - row.start)).c_str(), lane.device,
                       lane.stream, label.c_str());
    }
  }
  out += StrFormat("\n  recorded total:   %s\n", HumanDuration(r.recorded_ns).c_str());
  out += StrFormat("  predicted total:  %s (%+.2f%% vs recorded)\n",
                   HumanDuration(r.predicted_ns).c_str(), r.ErrorPercent());
  if (r.contradicting_edges || r.out_of_order_refs)
    out += StrFormat(
        "  note: %llu inferred dependencies contradicted recorded times (ignored); %llu "
        "edges were broken to resolve dependency cycles\n",
        static_cast<unsigned long long>(r.contradicting_edges),
        static_cast<unsigned long long>(r.out_of_order_refs));
  return out;
}

}  // namespace tracesmith::replay
