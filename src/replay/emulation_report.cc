// Text and JSON summaries of a schedule emulation. Worded as emulation /
// dry-run: no GPU work ran.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "tracesmith/base/file_util.h"
#include "tracesmith/replay/emulator.h"
#include "tracesmith/replay/replay_json.h"

namespace tracesmith::replay {
namespace {

// The first `schedule_rows` ops in predicted start order: from
// result.schedule when it was kept, else from op_start / op_end.
std::vector<EmulationResult::ScheduledOp> ScheduleRows(const EmulationResult& r,
                                                       size_t schedule_rows) {
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
  return rows;
}

std::string OpLabel(const analysis::CompactTrace& trace, const analysis::GpuOp& op) {
  return op.kind() == analysis::OpKind::kKernel ? std::string(trace.String(op.name_id))
                                                : analysis::OpKindName(op.kind());
}

}  // namespace

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
  const std::vector<EmulationResult::ScheduledOp> rows = ScheduleRows(r, schedule_rows);
  if (!rows.empty()) {
    out += StrFormat("\n  predicted schedule (first %zu ops; times from the predicted start)\n",
                     rows.size());
    for (const auto& row : rows) {
      const analysis::GpuOp op = trace.ops()[row.op];
      const auto& lane = trace.lanes()[op.lane()];
      std::string label = OpLabel(trace, op);
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

std::string FormatEmulationJson(std::string_view path, const analysis::CompactTrace& trace,
                                const EmulationOptions& options, const EmulationResult& r,
                                size_t schedule_rows) {
  using Json = nlohmann::ordered_json;  // keys in the documented order
  auto relative = [](int64_t t) { return std::max<int64_t>(0, t); };  // as the text report
  Json scales = Json::array();
  for (const KernelScale& k : options.scale_kernels)
    scales.push_back(Json{{"pattern", k.pattern}, {"factor", k.factor}});
  Json streams = Json::array();
  for (const EmulatedStream& s : r.streams)
    streams.push_back(Json{
        {"pid", s.pid},
        {"device", s.device},
        {"stream", s.stream},
        {"virtual", options.streams != 0},  // a --streams index, not a recorded stream id
        {"ops", s.ops},
        {"recorded_busy_ns", s.recorded_busy_ns},
        {"predicted_busy_ns", s.busy_ns},
        {"predicted_first_start_ns", relative(s.first_start)},
        {"predicted_last_end_ns", relative(s.last_end)},
    });
  Json schedule = Json::array();
  for (const auto& row : ScheduleRows(r, schedule_rows)) {
    const analysis::GpuOp op = trace.ops()[row.op];
    const auto& lane = trace.lanes()[op.lane()];
    schedule.push_back(Json{
        {"op", row.op},
        {"start_ns", relative(row.start - r.predicted_begin)},
        {"duration_ns", relative(row.end - row.start)},
        {"device", lane.device},
        {"stream", lane.stream},
        {"name", OpLabel(trace, op)},
    });
  }
  Json doc{
      {"mode", "dry-run"},
      {"version", kReplayJsonVersion},
      {"file", std::string(path)},
      {"what_if",
       Json{
           {"scale_kernels", std::move(scales)},
           {"remove_sync", options.remove_sync},
           {"streams", options.streams ? Json(options.streams) : Json(nullptr)},
       }},
      {"nodes",
       Json{
           {"gpu_ops", trace.ops().size()},
           {"api_calls", trace.calls().size()},
           {"sync_records", trace.syncs().size()},
       }},
      {"launch_floor_ns", r.launch_floor_ns},
      {"kernels_scaled", r.kernels_scaled},
      {"syncs_removed", r.syncs_removed},
      {"streams", std::move(streams)},
      {"schedule", std::move(schedule)},
      {"recorded_ns", r.recorded_ns},
      {"predicted_ns", r.predicted_ns},
      {"predicted_vs_recorded_pct", r.ErrorPercent()},
      {"contradicting_edges", r.contradicting_edges},
      {"broken_cycle_edges", r.out_of_order_refs},
  };
  // Kernel names come from the program: never let invalid UTF-8 throw.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace tracesmith::replay
