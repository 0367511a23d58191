// The default GPU metric set and the choice of what a device samples
// (tracesmith/capture/gpu_metric_set.h).
//
// Candidate names: the first ones are the GH100 (H200, H100) names as
// `ncu --query-metrics-collection pmsampling --chip gh100` lists them and
// Nsight Compute 2025.3.1's PmSampling section uses them for compute
// capability 9.0 (the base metrics carry their unit's trigger prefix,
// "TPC.TriageCompute.", "FBSP.TriageCompute.", ...; the rollups are the
// standard ones); not yet confirmed by a capture. The ones after are the
// unprefixed names Nsight Compute's sections use on other chips
// (sm__pipe_tensor_cycles_active_realtime, dramc__read_throughput,
// lts__throughput, sm__cycles_active; pcie__read_bytes from its Turing triage
// groups) and other spellings of the same counters, as fallbacks. None is
// checked here: the recorder asks CUPTI on the device which it accepts
// (docs/capture.md, "GPU metrics").
#include "tracesmith/capture/gpu_metric_set.h"

#include <algorithm>

#include "tracesmith/base/file_util.h"

namespace tracesmith::capture {

const std::vector<GpuMetricQuestion>& DefaultGpuMetricQuestions() {
  static const std::vector<GpuMetricQuestion> questions = {
      {"SM active",
       {{"TPC.TriageCompute.sm__cycles_active.avg", "cycles"},
        {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__cycles_active.avg.per_cycle_elapsed", "%", 100},
        {"gr__cycles_active.avg.pct_of_peak_sustained_elapsed", "%"}}},
      {"Tensor pipe active",
       {{"TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_"
         "elapsed",
         "%"},
        {"sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed", "%"}}},
      {"DRAM throughput",
       {{"FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dramc__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "%"}}},
      {"SM throughput",
       {{"TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"}}},
      {"Warps resident (occupancy)",
       {{"TPC.TriageCompute.tpc__warps_active_realtime.avg.per_cycle_active", "warps"},
        {"sm__warps_active.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed", "%"}}},
      {"FP32 pipe active",
       {{"TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_"
         "elapsed",
         "%"},
        {"sm__pipe_fma_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed", "%"},
        {"smsp__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed", "%"}}},
      {"FP64 pipe active",
       {{"TPC.TriageCompute.sm__pipe_fp64_cycles_active_realtime.avg.pct_of_peak_sustained_"
         "elapsed",
         "%"},
        {"sm__pipe_fp64_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed", "%"},
        {"sm__inst_executed_pipe_fp64_realtime.avg.pct_of_peak_sustained_elapsed", "%"}}},
      {"DRAM read throughput",
       {{"FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dramc__read_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dram__read_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dram__bytes_read.sum.pct_of_peak_sustained_elapsed", "%"}}},
      {"DRAM write throughput",
       {{"FBSP.TriageCompute.dramc__write_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dramc__write_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dram__write_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dram__bytes_write.sum.pct_of_peak_sustained_elapsed", "%"}}},
      {"L2 throughput",
       {{"LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"lts__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"lts__t_sectors.avg.pct_of_peak_sustained_elapsed", "%"}}},
      {"PCIe read",
       {{"PCI.TriageCompute.pcie__read_bytes.sum.per_second", "bytes/s"},
        {"pcie__read_bytes.sum.per_second", "bytes/s"},
        {"pcie__rx_bytes.sum.per_second", "bytes/s"}}},
      {"PCIe write",
       {{"PCI.TriageCompute.pcie__write_bytes.sum.per_second", "bytes/s"},
        {"pcie__write_bytes.sum.per_second", "bytes/s"},
        {"pcie__tx_bytes.sum.per_second", "bytes/s"}}},
      {"NVLink rx",
       {{"NVLRX.TriageCompute.nvlrx__bytes.sum.per_second", "bytes/s"},
        {"nvlrx__bytes.sum.per_second", "bytes/s"},
        {"nvlrx__bytes_data_user.sum.per_second", "bytes/s"}}},
      {"NVLink tx",
       {{"NVLTX.TriageCompute.nvltx__bytes.sum.per_second", "bytes/s"},
        {"nvltx__bytes.sum.per_second", "bytes/s"},
        {"nvltx__bytes_data_user.sum.per_second", "bytes/s"}}},
  };
  return questions;
}

StatusOr<GpuMetricsRequest> ParseGpuMetrics(std::string_view text) {
  GpuMetricsRequest r;
  if (text.empty() || text == "default") {
    r.kind = GpuMetricsRequest::Kind::kDefault;
    return r;
  }
  if (text == "list") {
    r.kind = GpuMetricsRequest::Kind::kList;
    return r;
  }
  r.kind = GpuMetricsRequest::Kind::kNames;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = std::min(text.find(',', at), text.size());
    std::string_view name = text.substr(at, comma - at);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '.' || c == ':';
    });
    if (name.empty() || !plain)
      return InvalidArgument(
          "--gpu-metrics: '" + std::string(text) +
          "' is not a metric list: give nothing (the default set), 'list' (the GPU's metrics) or "
          "CUPTI metric names separated by commas (e.g. "
          "sm__cycles_active.avg.pct_of_peak_sustained_elapsed)");
    if (std::find(r.names.begin(), r.names.end(), name) == r.names.end())
      r.names.emplace_back(name);
    at = comma + 1;
  }
  return r;
}

std::string GpuMetricsText(const GpuMetricsRequest& request) {
  switch (request.kind) {
    case GpuMetricsRequest::Kind::kOff:
      return "";
    case GpuMetricsRequest::Kind::kDefault:
      return "default";
    case GpuMetricsRequest::Kind::kList:
      return "list";
    case GpuMetricsRequest::Kind::kNames:
      break;
  }
  std::string out;
  for (const std::string& n : request.names) out += (out.empty() ? "" : ",") + n;
  return out;
}

StatusOr<uint64_t> ParseGpuMetricsInterval(std::string_view text) {
  auto ns = ParseDuration(std::string(text));
  if (!ns.ok()) return InvalidArgument("--gpu-metrics-interval: " + ns.status().message());
  if (*ns < kMinGpuMetricsIntervalNs || *ns > kMaxGpuMetricsIntervalNs)
    return InvalidArgument(
        "--gpu-metrics-interval: '" + std::string(text) +
        "' is outside 10us..1s (shorter intervals overflow the GPU's sample buffer faster than "
        "it can be read; the default is 1ms, 1 kHz)");
  return *ns;
}

std::string_view GpuMetricShortName(std::string_view name) {
  if (name.starts_with("pmsampling:")) name.remove_prefix(sizeof("pmsampling:") - 1);
  // "TPC.TriageCompute.sm__cycles_active.avg": the prefix ends at the last
  // '.' before the counter's "unit__" part.
  const size_t counter = name.find("__");
  if (counter == std::string_view::npos) return name;
  const size_t dot = name.rfind('.', counter);
  if (dot != std::string_view::npos) name.remove_prefix(dot + 1);
  return name;
}

std::string GpuMetricUnitOfName(std::string_view name) {
  name = GpuMetricShortName(name);
  if (name.find(".pct") != std::string_view::npos) return "%";
  if (name.ends_with(".per_second")) return "/s";
  if (name.find(".per_cycle") != std::string_view::npos) return "/cycle";
  // A counter of cycles with a plain rollup ("sm__cycles_active.avg"): cycles per sample.
  const size_t dot = name.find('.');
  if (dot != std::string_view::npos &&
      name.substr(0, dot).find("cycles") != std::string_view::npos) {
    const std::string_view rollup = name.substr(dot + 1);
    if (rollup == "avg" || rollup == "sum" || rollup == "min" || rollup == "max") return "cycles";
  }
  return "";
}

GpuMetricChoice ChooseGpuMetrics(
    const GpuMetricsRequest& request, const std::function<bool(const std::string&)>& accepts,
    const std::function<bool(const std::vector<std::string>&)>& one_pass) {
  GpuMetricChoice c;
  auto names_of = [](const std::vector<ChosenGpuMetric>& kept) {
    std::vector<std::string> names;
    for (const ChosenGpuMetric& m : kept) names.push_back(m.name);
    return names;
  };
  if (request.kind == GpuMetricsRequest::Kind::kNames) {
    for (const std::string& n : request.names) {
      if (accepts(n))
        c.kept.push_back({n, std::string(GpuMetricShortName(n)), GpuMetricUnitOfName(n), 1});
      else
        c.unknown.push_back(n);
    }
    if (!c.unknown.empty()) c.kept.clear();
    if (!c.kept.empty() && !one_pass(names_of(c.kept))) {
      c.multi_pass = true;
      c.kept.clear();
    }
    return c;
  }
  if (request.kind != GpuMetricsRequest::Kind::kDefault) return c;
  // Every question's first candidate at once: when the chip takes them all
  // in one pass, that is the set (one question to CUPTI instead of one per name).
  std::vector<ChosenGpuMetric> firsts;
  for (const GpuMetricQuestion& q : DefaultGpuMetricQuestions()) {
    const GpuMetricCandidate& m = q.candidates.front();
    firsts.push_back({m.name, q.label, m.unit, m.scale});
  }
  if (one_pass(names_of(firsts))) {
    c.kept = std::move(firsts);
    return c;
  }
  for (const GpuMetricQuestion& q : DefaultGpuMetricQuestions()) {
    bool answered = false;
    for (const GpuMetricCandidate& m : q.candidates)
      if (accepts(m.name)) {
        c.kept.push_back({m.name, q.label, m.unit, m.scale});
        answered = true;
        break;
      }
    if (!answered) c.unanswered.push_back(q.label);
  }
  while (!c.kept.empty() && !one_pass(names_of(c.kept))) {
    c.dropped.push_back(c.kept.back().label + " (" + c.kept.back().name + ")");
    c.kept.pop_back();
  }
  return c;
}

std::vector<std::string> DescribeGpuMetricChoice(const GpuMetricChoice& c) {
  std::vector<std::string> lines;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!c.unknown.empty())
    lines.push_back("not PM sampling metrics of this GPU: " + join(c.unknown) +
                    " (`tracesmith profile --gpu-metrics=list` lists the valid ones)");
  if (c.multi_pass)
    lines.push_back(
        "the metrics given need more than one pass, which PM sampling cannot make: give fewer");
  if (!c.kept.empty()) {
    std::vector<std::string> kept;
    for (const ChosenGpuMetric& m : c.kept)
      kept.push_back(m.label == m.name ? m.name : m.label + " (" + m.name + ")");
    lines.push_back("sampled: " + join(kept));
  }
  if (!c.dropped.empty()) lines.push_back("dropped to fit one pass: " + join(c.dropped));
  if (!c.unanswered.empty()) lines.push_back("not available on this GPU: " + join(c.unanswered));
  return lines;
}

}  // namespace tracesmith::capture
