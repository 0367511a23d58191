// The text report and the --json document of a GPU replay run (see
// replay_json.h; schema in docs/replay-format.md, "Results as JSON"). Times
// are integer nanoseconds; absent values are null, so every key is always
// there.
#include "tracesmith/replay/replay_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "tracesmith/base/status.h"
#include "tracesmith/replay/gpu_replayer.h"

namespace tracesmith::replay {
namespace {

// ordered_json: keys stay in the order written here (the documented order).
using Json = nlohmann::ordered_json;

// Microseconds (the replayer's unit) to integer nanoseconds.
uint64_t Ns(double us) { return us > 0 ? uint64_t(std::llround(us * 1000.0)) : 0; }

Json NullIfZero(uint64_t v) { return v ? Json(v) : Json(nullptr); }

// A comparison; the address and errors are null when nothing differs (the
// float32 errors are also null when no differing word was a number pair).
Json CompareJson(const CompareResult& c) {
  const bool differs = !c.identical();
  const bool float_errors = differs && c.float_words_differing > 0;
  return Json{
      {"bytes_compared", c.bytes_compared},
      {"bytes_differing", c.bytes_differing},
      {"first_diff_address", differs ? Json(c.first_diff_address) : Json(nullptr)},
      {"float32_words_differing", c.float_words_differing},
      {"max_abs_error", float_errors ? Json(c.max_abs_error) : Json(nullptr)},
      {"max_rel_error", float_errors ? Json(c.max_rel_error) : Json(nullptr)},
  };
}

std::string_view StatusName(const LaunchOutcome& o) {
  if (!o.error.empty()) return "error";
  return o.vs_capture.identical() ? "identical" : "different";
}

Json Attributes(const std::string& joined) {  // "cooperative, priority" -> list
  Json list = Json::array();
  for (size_t begin = 0; begin < joined.size();) {
    size_t end = joined.find(", ", begin);
    if (end == std::string::npos) end = joined.size();
    list.push_back(joined.substr(begin, end - begin));
    begin = end + 2;
  }
  return list;
}

Json TimeJson(const LaunchOutcome& o) {
  // A sequence is timed on the host clock, restores included: no ratio with
  // the kernels' time in the program (as in the text report).
  const char* source = o.sequence ? "host_clock" : o.time_from_cupti ? "cupti" : "cuda_events";
  Json ratio = nullptr;
  if (!o.sequence && o.recorded_ns) ratio = o.time.median_us * 1000.0 / double(o.recorded_ns);
  return Json{
      {"source", source},
      {"median_ns", Ns(o.time.median_us)},
      {"min_ns", Ns(o.time.min_us)},
      {"max_ns", Ns(o.time.max_us)},
      {"cuda_events_median_ns",
       o.time_from_cupti ? Json(Ns(o.event_time.median_us)) : Json(nullptr)},
      {"program_ns", NullIfZero(o.recorded_ns)},
      {"replay_over_program", ratio},
      {"setup_ns", NullIfZero(Ns(o.setup_ms * 1000.0))},
      {"l2_flushed", o.l2_flushed},
  };
}

// --warm: null when not measured. The ratio to the program's time only when
// the warm runs repeated the program's work (idempotent).
Json WarmJson(const LaunchOutcome& o) {
  const LaunchOutcome::WarmTiming& w = o.warm;
  if (!w.runs) return nullptr;
  const Idempotence verdict = w.idempotence();
  Json ratio = nullptr;
  if (verdict == Idempotence::kIdempotent && o.recorded_ns)
    ratio = w.time.median_us * 1000.0 / double(o.recorded_ns);
  return Json{
      {"runs", w.runs},
      {"source", w.time_from_cupti ? "cupti" : "cuda_events"},
      {"median_ns", Ns(w.time.median_us)},
      {"min_ns", Ns(w.time.min_us)},
      {"max_ns", Ns(w.time.max_us)},
      {"cuda_events_median_ns",
       w.time_from_cupti ? Json(Ns(w.event_time.median_us)) : Json(nullptr)},
      {"replay_over_program", ratio},
      {"idempotence", IdempotenceName(verdict)},
      {"rerun_vs_outputs", CompareJson(w.check.rerun_vs_outputs)},
      {"bytes_beyond_nondeterminism", w.check.bytes_beyond_nondeterminism},
  };
}

// --metrics: null when not asked for; else measured or the reason why not,
// each value under its CUPTI name and the derived figures (NaN: null).
Json ProfileJson(const KernelProfile& p) {
  if (!p.requested) return nullptr;
  auto num = [](double v) { return std::isnan(v) ? Json(nullptr) : Json(v); };
  Json values = Json::object();
  for (const KernelMetricValue& v : p.values) values[v.name] = num(v.value);
  return Json{
      {"measured", p.measured},
      {"error", p.measured ? Json(nullptr) : Json(p.error)},
      {"passes", p.passes},
      {"values", values},
      {"not_accepted", p.dropped},
      {"duration_ns", num(p.duration_ns)},
      {"sm_throughput_pct", num(p.sm_pct)},
      {"memory_throughput_pct", num(p.memory_pct)},
      {"achieved_occupancy_pct", num(p.occupancy_pct)},
      {"dram_bytes", num(p.dram_bytes)},
      {"dram_throughput_pct", num(p.dram_pct)},
      {"l2_hit_rate_pct", num(p.l2_hit_pct)},
      {"tensor_pipe_pct", num(p.tensor_pct)},
      {"flops",
       Json{{"fp32", num(p.flops_fp32)}, {"fp64", num(p.flops_fp64)}, {"fp16", num(p.flops_fp16)}}},
      {"arithmetic_intensity", num(p.intensity)},
      {"roofline", p.verdict.empty() ? Json(nullptr) : Json(p.verdict)},
      {"roofline_why", p.why.empty() ? Json(nullptr) : Json(p.why)},
  };
}

// docs/replay-format.md, "Results as JSON": a launch's "memory".
Json MemoryJson(const LaunchMemory& m) {
  if (m.ranges == 0) return nullptr;  // a range replay
  Json reached = Json::array();
  for (const LaunchMemory::Group& g : m.groups)
    reached.push_back(Json{{"via_range", g.via},
                           {"via_address", g.via_address},
                           {"allocations", g.allocations},
                           {"bytes", g.bytes},
                           {"first_offset", g.first_offset},
                           {"last_offset", g.last_offset},
                           {"depth", g.depth}});
  const format::MemoryCoverage& c = m.coverage;
  return Json{
      {"scope", format::MemoryScopeName(m.scope)},
      {"ranges", m.ranges},
      {"bytes", m.bytes},
      {"from_parameters", m.from_parameters},
      {"reached_through_pointers", m.reached},
      {"reached_bytes", m.reached_bytes},
      {"requested", m.requested},
      {"live", m.live},
      {"reached", reached},
      {"not_recorded", Json{{"over_budget", c.ranges_over_budget},
                            {"bytes_over_budget", c.bytes_over_budget},
                            {"past_depth", c.ranges_past_depth},
                            {"unresolved_words", c.words_unresolved}}},
  };
}

// A graph launch's node counts and the node replayed alone; null otherwise.
Json GraphJson(const LaunchOutcome& o) {
  if (!o.graph.is_graph) return nullptr;
  const LaunchOutcome::GraphInfo& g = o.graph;
  return Json{
      {"nodes", g.nodes},
      {"kernels", g.kernels},
      {"memsets", g.memsets},
      {"memcpys", g.memcpys},
      {"empty", g.empty},
      {"node", g.node >= 0 ? Json(g.node) : Json(nullptr)},
      {"ancestors", g.node >= 0 ? Json(g.ancestors) : Json(nullptr)},
  };
}

Json OutcomeJson(const LaunchOutcome& o) {
  const bool failed = !o.error.empty();
  Json j{
      {"index", o.index},
      {"kind", o.sequence         ? "range"
               : o.graph.is_graph ? "graph"
                                  : "launch"},
      {"last_index", o.sequence ? o.sequence_counts.last_index : o.index},
      {"kernel", o.function},
      {"attributes", Attributes(o.attributes)},
      {"status", StatusName(o)},
      {"error", failed ? Json(o.error) : Json(nullptr)},
  };
  if (failed) {  // the rest was measured only in part
    for (const char* key : {"output", "determinism", "time", "warm", "metrics", "addresses"})
      j[key] = nullptr;
    j["memory"] = MemoryJson(o.memory);  // what the capture recorded, known before the failure
    j["sequence"] = nullptr;
    j["graph"] = GraphJson(o);
    return j;
  }
  j["output"] = CompareJson(o.vs_capture);
  j["determinism"] = Json{
      {"iterations", o.iterations},
      {"deterministic", !o.nondeterministic()},
      {"replays_differing", o.iterations_differing},
      {"vs_first_replay", o.nondeterministic() ? CompareJson(o.vs_first_replay) : Json(nullptr)},
  };
  j["time"] = TimeJson(o);
  j["warm"] = WarmJson(o);
  j["metrics"] = ProfileJson(o.profile);
  j["addresses"] = Json{
      {"ranges", o.ranges_total},
      {"at_captured_address", o.ranges_total - o.ranges_relocated},
      {"mapped_away", o.ranges_relocated},
      {"param_words_rewritten", o.param_words_rewritten},
      {"memory_words_rewritten", o.memory_words_rewritten},
  };
  j["memory"] = MemoryJson(o.memory);
  if (o.sequence) {
    const LaunchOutcome::SequenceCounts& c = o.sequence_counts;
    j["sequence"] = Json{
        {"launches", c.launches},
        {"stream_ops", c.stream_ops},
        {"copies", c.copies},
        {"memsets", c.memsets},
        {"syncs", c.syncs},
        {"streams", c.streams},
        {"external_writes", o.external_writes},
        {"ranges_not_compared", o.ranges_not_compared},
    };
  } else {
    j["sequence"] = nullptr;
  }
  j["graph"] = GraphJson(o);
  return j;
}

// Kernel names come from the program: never let invalid UTF-8 throw.
std::string Dump(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

const char* ExitMeaning(int code) {
  switch (code) {
    case kReplayIdentical:
      return "every launch identical to the capture and deterministic";
    case kReplayDiffers:
      return "some output differed from the capture or between replays";
    case kReplayGpuError:
      return "error: a CUDA driver or CUPTI call failed";
    default:
      return "error: the replay could not run to the end";
  }
}

}  // namespace

int ReplayExitCode(const ReplayRun& run) {
  if (!run.error.empty()) return run.gpu_error ? kReplayGpuError : kReplayError;
  for (const LaunchOutcome& o : run.launches) {
    if (!o.error.empty()) return kReplayError;
    if (!o.vs_capture.identical() || o.nondeterministic()) return kReplayDiffers;
  }
  return kReplayIdentical;
}

std::string FormatReplayHeader(std::string_view path, std::string_view device_line) {
  return "GPU replay of " + std::string(path) + " on " + std::string(device_line) + "\n";
}

std::string FormatReplayText(const ReplayRun& run) {
  std::string s;
  for (const LaunchOutcome& o : run.launches) {
    if (!o.error.empty()) continue;
    if (s.empty()) s = FormatReplayHeader(run.path, run.device_line);
    s += FormatLaunchOutcome(o);
  }
  return s;
}

std::string LaunchOutcomeJson(const LaunchOutcome& outcome) {
  return Dump(OutcomeJson(outcome), -1);
}

std::string FormatReplayJson(const ReplayRun& run) {
  const size_t newline = run.device_line.find('\n');
  auto line = [](std::string_view s) { return s.empty() ? Json(nullptr) : Json(std::string(s)); };
  Json launches = Json::array();
  uint64_t identical = 0, different = 0, nondeterministic = 0, errors = 0;
  for (const LaunchOutcome& o : run.launches) {
    launches.push_back(OutcomeJson(o));
    if (!o.error.empty()) {
      ++errors;
      continue;
    }
    ++(o.vs_capture.identical() ? identical : different);
    nondeterministic += o.nondeterministic();
  }
  const int code = ReplayExitCode(run);
  Json doc{
      {"mode", "gpu"},
      {"version", kReplayJsonVersion},
      {"file", run.path},
      {"device", line(std::string_view(run.device_line).substr(0, newline))},
      {"device_memory", newline == std::string::npos
                            ? Json(nullptr)
                            : line(std::string_view(run.device_line).substr(newline + 1))},
      {"options",
       Json{
           {"iterations", run.iterations},
           {"launch", run.launch >= 0 ? Json(run.launch) : Json(nullptr)},
           {"node", run.node >= 0 ? Json(run.node) : Json(nullptr)},
           {"range",
            run.range_first >= 0 ? Json::array({run.range_first, run.range_last}) : Json(nullptr)},
           {"device", run.device},
           {"same_addresses_only", run.same_addresses_only},
           {"warm", run.warm},
       }},
      {"launches", std::move(launches)},
      {"summary",
       Json{
           {"launches", run.launches.size()},
           {"identical", identical},
           {"different", different},
           {"nondeterministic", nondeterministic},
           {"errors", errors},
           {"exit_code", code},
           {"meaning", ExitMeaning(code)},
       }},
      {"error", run.error.empty() ? Json(nullptr) : Json(run.error)},
      {"report", FormatReplayText(run)},
  };
  return Dump(doc, 2) + "\n";
}

}  // namespace tracesmith::replay
