// The --json form of the analysis report. All times are integer nanoseconds;
// shares are percentages.
#include <cmath>

#include "pc_samples_json.h"
#include "tracesmith/analysis/json_writer.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::analysis {

namespace {

void Stats(JsonWriter& j, std::string_view key, const DurationStats& s) {
  j.BeginObject(key)
      .UInt("count", s.count)
      .UInt("total_ns", s.total_ns)
      .UInt("mean_ns", s.mean_ns)
      .UInt("p50_ns", s.p50_ns)
      .UInt("p95_ns", s.p95_ns)
      .UInt("max_ns", s.max_ns)
      .EndObject();
}

void Idle(JsonWriter& j, const IdleBreakdown& b) {
  j.BeginObject("idle_ns");
  for (int c = 0; c < kNumIdleCauses; ++c) j.UInt(IdleCauseName(IdleCause(c)), b.ns[c]);
  j.EndObject();
}

void Named(JsonWriter& j, std::string_view key, const std::vector<NamedStats>& rows) {
  j.BeginArray(key);
  for (const NamedStats& n : rows) {
    j.BeginObject().Str("name", n.name).Num("share_pct", n.share);
    Stats(j, "duration", n.stats);
    j.EndObject();
  }
  j.EndArray();
}

// "gpu_metrics" (only when the trace has GPU metric samples). A mean no
// sample covered (or not finite) is null.
void GpuMetricsJson(JsonWriter& j, const GpuMetricsReport& g) {
  auto value = [&](std::string_view key, double v) { j.NumOrNull(key, v); };
  j.BeginObject("gpu_metrics").UInt("samples", g.samples).UInt("merged", g.merged);
  j.BeginArray("metrics");
  for (const GpuMetricStat& m : g.metrics) {
    j.BeginObject()
        .UInt("pid", m.pid)
        .UInt("device", m.device)
        .Str("name", m.name)
        .Str("label", m.label)
        .Str("unit", m.unit);
    value("mean", m.mean);
    value("max", m.max);
    j.UInt("samples", m.samples).UInt("covered_ns", m.covered_ns).EndObject();
  }
  j.EndArray();
  j.BeginArray("steps");
  for (const GpuMetricStep& st : g.steps) {
    j.BeginObject().UInt("step", st.number).UInt("ns", st.ns);
    j.BeginObject("values");
    for (size_t c = 0; c < st.values.size() && c < g.columns.size(); ++c)
      value(g.columns[c], st.values[c]);
    j.EndObject().EndObject();
  }
  j.EndArray();
  j.BeginArray("kernels");
  for (const GpuMetricKernel& k : g.kernels) {
    j.BeginObject().Str("name", k.name).UInt("alone_ns", k.alone_ns).UInt("shared_ns", k.shared_ns);
    for (const auto& [key, v] : {std::pair{"alone", &k.alone}, std::pair{"shared", &k.shared}}) {
      j.BeginObject(key);
      for (size_t c = 0; c < v->size(); ++c) value(g.columns[c], (*v)[c]);
      j.EndObject();
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

// "app_counters" (only when the program reported counters: tracesmith.counter):
// each counter's totals, its values per step and the correlation with the
// steps' time. A value no step held (or not finite) is null.
void AppCountersJson(JsonWriter& j, const AppCountersReport& a) {
  auto value = [&](std::string_view key, double v) { j.ExactOrNull(key, v); };
  j.BeginObject("app_counters").UInt("values", a.values).UInt("dropped", a.dropped);
  j.BeginArray("counters");
  for (const AppCounterStat& c : a.counters) {
    j.BeginObject().Str("name", c.name).UInt("pid", c.pid).UInt("values", c.values);
    value("min", c.min);
    value("mean", c.mean);
    value("max", c.max);
    value("last", c.last);
    j.BeginArray("steps");
    for (const AppCounterStep& s : c.steps) {
      j.BeginObject().UInt("step", s.number).UInt("values", s.values);
      value("min", s.min);
      value("mean", s.mean);
      value("max", s.max);
      j.EndObject();
    }
    j.EndArray();
    j.BeginObject("correlation").UInt("steps", c.r_steps);
    value("r", c.r_wall);
    value("r_gpu", c.r_gpu);
    j.Str("note", c.note).EndObject();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

// "kernel_timeouts" (only when a kernel ran past profile --kernel-timeout).
void KernelTimeoutsJson(JsonWriter& j, const std::vector<KernelTimeoutReport>& timeouts) {
  j.BeginArray("kernel_timeouts");
  for (const KernelTimeoutReport& k : timeouts) {
    j.BeginObject()
        .Str("name", k.name)
        .UInt("pid", k.pid)
        .UInt("device", k.device_id)
        .UInt("correlation_id", k.correlation_id)
        .UInt("running_ns", k.running_ns)
        .UInt("since_launch_ns", k.since_launch_ns)
        .UInt("timeout_ns", k.timeout_ns)
        .UInt("samples", k.samples)
        .Bool("ended_program", k.ended)
        .Str("site", k.site);
    StallsJson(j, "stalls", k.stalls);
    LinesJson(j, "lines", k.lines);
    j.EndObject();
  }
  j.EndArray();
}

// "gpu_samples" (only when the trace has GPU instruction samples).
void GpuSamples(JsonWriter& j, const PcSampleReport& s) {
  j.BeginObject("gpu_samples")
      .UInt("samples", s.samples)
      .UInt("rows", s.rows)
      .Bool("window_narrower", s.window_narrower);
  j.BeginArray("functions");
  for (const FunctionSamples& f : s.functions) {
    j.BeginObject()
        .Str("name", f.name)
        .Str("function", f.function)
        .UInt("pid", f.pid)
        .UInt("samples", f.samples)
        .Num("share_pct", f.share)
        .UInt("kernels", f.kernels)
        .UInt("kernel_ns", f.kernel_ns)
        .Num("gpu_share_pct", f.gpu_share);
    StallsJson(j, "stalls", f.stalls);
    LinesJson(j, "lines", f.lines);
    j.BeginArray("instructions");
    for (const InstructionShare& x : f.instructions)
      j.BeginObject()
          .UInt("pc_offset", x.pc_offset)
          .Str("file", x.file)
          .UInt("line", x.line)
          .UInt("samples", x.samples)
          .Num("share_pct", x.share)
          .Str("top_stall", x.top_stall)
          .Num("top_stall_share_pct", x.top_stall_share)
          .Str("sass", x.sass)
          .EndObject();
    j.EndArray();
    j.UInt("samples_joined_by_time", f.by_window);
    SitesJson(j, "sites", f.sites);
    j.EndObject();
  }
  j.EndArray().EndObject();
}

}  // namespace

void WriteJsonReport(const AnalysisReport& r, std::ostream& out) {
  WriteJsonReportWithRanks(r, out, {});
}

void WriteJsonReportWithRanks(const AnalysisReport& r, std::ostream& out,
                              std::string_view ranks_json) {
  JsonWriter j(out);
  j.BeginObject().Str("source", r.source).UInt("events", r.events);
  j.BeginObject("window")
      .UInt("trace_begin_ns", r.trace_begin)
      .UInt("begin_ns", r.window_begin)
      .UInt("end_ns", r.window_end)
      .UInt("wall_ns", r.wall_ns())
      .Bool("clocks_aligned", r.compact.clocks_aligned)
      .Bool("active_region", r.active.applied)
      .Str("note", r.window_note)
      .EndObject();
  if (r.active.applied) {
    auto outside = [&](const char* key, const CompactTrace::OutsideSpan& s,
                       const std::vector<std::string>& names, bool warmup = false) {
      j.BeginObject(key).UInt("begin_ns", s.begin).UInt("end_ns", s.end).UInt("api_ns", s.api_ns);
      if (warmup)  // its steps (1..steps of "steps"), and its share of first kernel to last op
        j.UInt("steps", r.steps.warmup).Num("share_pct", r.warmup_share());
      j.BeginArray("longest_calls");
      for (size_t i = 0; i < s.longest_calls.size() && i < names.size(); ++i)
        j.BeginObject()
            .Str("name", names[i])
            .UInt("start_ns", s.longest_calls[i].start_ns)
            .UInt("ns", s.longest_calls[i].ns)
            .EndObject();
      j.EndArray().EndObject();
    };
    outside("startup", r.active.startup, r.startup_call_names);
    if (r.warmup_apart()) outside("warmup", r.active.warmup, r.warmup_call_names, true);
    outside("teardown", r.active.teardown, r.teardown_call_names);
  }
  if (!r.steps.steps.empty()) {
    j.BeginObject("steps")
        .Str("method", r.steps.method)
        .Str("anchor", r.steps.anchor)
        .UInt("kernels_per_step", r.steps.period)
        .UInt("median_ns", r.steps.median_ns)
        .UInt("warmup", r.steps.warmup);
    j.BeginArray("outliers");
    for (uint32_t i : r.steps.outliers) j.UInt("", i + 1);
    j.EndArray();
    j.BeginArray("list");
    for (const Step& s : r.steps.steps)
      j.BeginObject()
          .UInt("begin_ns", s.begin_ns)
          .UInt("end_ns", s.end_ns)
          .UInt("gpu_busy_ns", s.gpu_busy_ns)
          .UInt("kernels", s.kernels)
          .EndObject();
    j.EndArray().EndObject();
  }
  j.BeginArray("findings");
  for (const std::string& f : r.findings) j.Str("", f);
  j.EndArray();
  j.BeginArray("devices");
  for (const DeviceTimeline& d : r.timeline.devices) {
    j.BeginObject()
        .UInt("device", d.device)
        .UInt("streams", d.streams)
        .UInt("ops", d.ops)
        .UInt("busy_ns", d.busy_ns)
        .Num("utilization_pct", Percent(d.busy_ns, r.wall_ns()))
        .UInt("kernel_ns", d.kernel_ns)
        .UInt("copy_ns", d.copy_ns)
        .UInt("kernel_copy_overlap_ns", d.kernel_copy_overlap_ns)
        .UInt("max_concurrency", d.max_concurrency)
        .Num("avg_concurrency", d.avg_concurrency)
        .UInt("nccl_ns", d.nccl_ns)
        .UInt("compute_ns", d.compute_ns)
        .UInt("nccl_compute_overlap_ns", d.nccl_compute_overlap_ns);
    Idle(j, d.idle);
    j.EndObject();
  }
  j.EndArray();
  j.BeginArray("streams");
  for (size_t i = 0; i < r.timeline.streams.size(); ++i) {
    const StreamTimeline& s = r.timeline.streams[i];
    j.BeginObject()
        .Str("name", r.stream_names[i])
        .UInt("kernels", s.kernels)
        .UInt("memcpys", s.memcpys)
        .UInt("memsets", s.memsets)
        .UInt("busy_ns", s.busy_ns)
        .Num("utilization_pct", Percent(s.busy_ns, r.wall_ns()));
    j.BeginObject("state_ns");
    for (int k = 0; k < kNumStreamStates; ++k)
      j.UInt(StreamStateName(StreamState(k)), s.state_ns[k]);
    j.EndObject();
    Idle(j, s.idle);
    j.EndObject();
  }
  j.EndArray();
  j.UInt("kernel_count", r.kernel_count).UInt("kernel_ns", r.kernel_ns);
  Named(j, "kernels", r.kernels);
  Named(j, "call_sites", r.call_sites);
  j.Num("unnamed_call_site_share", r.unnamed_call_site_share);
  j.BeginArray("nvtx");
  for (const NvtxStats& n : r.nvtx)
    j.BeginObject()
        .Str("name", n.name)
        .UInt("ranges", n.ranges)
        .UInt("range_ns", n.range_ns)
        .UInt("kernels", n.kernels)
        .UInt("kernel_ns", n.kernel_ns)
        .Num("share_pct", n.share)
        .EndObject();
  j.EndArray();
  j.BeginArray("copies");
  for (const CopyStats& c : r.copies)
    j.BeginObject()
        .Str("direction", c.direction)
        .UInt("count", c.count)
        .UInt("bytes", c.bytes)
        .UInt("busy_ns", c.busy_ns)
        .Num("gb_per_s", c.gbps())
        .EndObject();
  j.EndArray();
  j.BeginArray("launches");
  for (const LaunchStats& l : r.launches) {
    j.BeginObject().Str("api", l.api).UInt("outliers", l.outliers);
    Stats(j, "api_duration", l.api_duration);
    Stats(j, "launch_delay", l.launch_delay);
    j.EndObject();
  }
  j.EndArray();
  j.BeginArray("launch_outliers");
  for (const LaunchOutlier& o : r.outliers)
    j.BeginObject()
        .Str("api", o.api)
        .Str("op", o.op)
        .Str("call_site", o.call_site)
        .UInt("start_ns", o.start_ns)
        .UInt("api_ns", o.api_ns)
        .UInt("delay_ns", o.delay_ns)
        .EndObject();
  j.EndArray();
  j.UInt("graph_launches", r.graph_launches);
  j.BeginArray("graphs");
  for (const GraphStats& g : r.graphs)
    j.BeginObject()
        .UInt("graph_id", g.graph_id)
        .UInt("launches", g.launches)
        .UInt("kernels", g.kernels)
        .UInt("kernel_ns", g.kernel_ns)
        .EndObject();
  j.EndArray();
  j.BeginObject("critical_path").UInt("steps", r.critical_path_nodes);
  j.BeginObject("ns");
  for (int c = 0; c < kNumPathCategories; ++c)
    j.UInt(PathCategoryName(PathCategory(c)), r.critical_path_ns[c]);
  j.EndObject();
  j.BeginArray("top");
  for (const PathShare& s : r.critical_path_top)
    j.BeginObject().Str("name", s.name).UInt("ns", s.ns).EndObject();
  j.EndArray().EndObject();
  j.BeginObject("data_quality")
      .UInt("inverted_intervals", r.compact.inverted_intervals)
      .UInt("lanes_resorted", r.compact.lanes_resorted)
      .UInt("processes_unaligned", r.compact.processes_unaligned)
      .UInt("events_ignored", r.compact.events_ignored)
      .EndObject();
  if (!r.gpu_samples.empty()) GpuSamples(j, r.gpu_samples);
  if (!r.sass_counts.empty()) {
    j.BeginArray("sass_counts");
    for (const FunctionCounts& f : r.sass_counts) {
      j.BeginObject()
          .Str("name", f.name)
          .Str("function", f.function)
          .UInt("pid", f.pid)
          .UInt("kernels", f.kernels)
          .UInt("kernel_ns", f.kernel_ns);
      CountsJson(j, f);
      j.EndObject();
    }
    j.EndArray();
  }
  if (!r.kernel_timeouts.empty()) KernelTimeoutsJson(j, r.kernel_timeouts);
  if (!r.gpu_metrics.empty()) GpuMetricsJson(j, r.gpu_metrics);
  if (!r.app_counters.empty()) AppCountersJson(j, r.app_counters);
  if (!ranks_json.empty()) j.Raw("ranks", ranks_json);
  j.EndObject();
}

}  // namespace tracesmith::analysis
