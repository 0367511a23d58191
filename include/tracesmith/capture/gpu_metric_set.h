// Which GPU hardware metrics `profile --gpu-metrics` samples (CUPTI PM
// sampling, capture/pm_sampling_recorder.cc), decided without CUDA so that
// the choice is tested on any machine: the option's parsing, the default set
// and the rule that picks from it what a chip accepts in one pass.
//
// Metric names differ per chip and CUPTI version, and cannot all be checked
// ahead: the default set is a list of questions (SM active, tensor pipe, DRAM
// throughput, ...), each with candidate names in order of preference. Per
// device the recorder keeps, per question, the first candidate CUPTI accepts
// alone (ConfigAddMetrics), then drops the lowest-priority kept metrics
// until the set needs one pass (PM sampling cannot replay).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::capture {

// One name CUPTI may know for a question's metric; `scale` turns its value
// into `unit` (1 for most; 100 for a 0..1 ratio shown as %).
struct GpuMetricCandidate {
  const char* name;
  const char* unit;
  double scale = 1;
};

// A question of the default set: its short plain name ("SM active") and its
// candidates, most preferred first. The questions are in priority order: the
// last are dropped first when the set needs more than one pass.
struct GpuMetricQuestion {
  const char* label;
  std::vector<GpuMetricCandidate> candidates;
};
const std::vector<GpuMetricQuestion>& DefaultGpuMetricQuestions();

// --gpu-metrics' value: "" or "default" (the default set), "list" (print the
// chip's PM sampling metrics and exit) or a comma-separated list of CUPTI
// metric names (exactly those).
struct GpuMetricsRequest {
  enum class Kind : uint8_t { kOff, kDefault, kList, kNames } kind = Kind::kOff;
  std::vector<std::string> names;  // kNames
  bool operator==(const GpuMetricsRequest&) const = default;
};
StatusOr<GpuMetricsRequest> ParseGpuMetrics(std::string_view text);
// The value that ParseGpuMetrics reads back as `request` ("" when off).
std::string GpuMetricsText(const GpuMetricsRequest& request);

// --gpu-metrics-interval: 1 ms by default (1 kHz), from 10 us to 1 s. Not
// shorter by default: CUPTI's decode of the default set takes ~130-250 us per
// sample on one CPU thread (H200, CUDA 13.0, 2026-11-29), so at 100 us it
// falls behind and the GPU's buffer overflows; one or a few metrics keep up
// at 100 us (docs/capture.md, "GPU hardware metrics over time").
inline constexpr uint64_t kDefaultGpuMetricsIntervalNs = 1'000'000;
inline constexpr uint64_t kMinGpuMetricsIntervalNs = 10'000;
inline constexpr uint64_t kMaxGpuMetricsIntervalNs = 1'000'000'000;
// A duration ("100us", "1ms", nanoseconds); InvalidArgument outside the range.
StatusOr<uint64_t> ParseGpuMetricsInterval(std::string_view text);

// A metric the recorder samples: CUPTI's name, the short plain name of its
// question (the name itself for a metric the user named) and unit.
struct ChosenGpuMetric {
  std::string name, label, unit;
  double scale = 1;
  bool operator==(const ChosenGpuMetric&) const = default;
};

// What one device samples, and why the rest is not sampled.
struct GpuMetricChoice {
  std::vector<ChosenGpuMetric> kept;
  std::vector<std::string> unanswered;  // default set: questions no candidate of which CUPTI took
  std::vector<std::string> dropped;     // default set: kept names dropped to fit one pass
  std::vector<std::string> unknown;     // named set: the names CUPTI did not accept
  bool multi_pass = false;              // named set: they need more than one pass
  // Nothing to sample (no accepted metric, or a named set refused as a whole).
  bool empty() const { return kept.empty(); }
};

// Picks the metrics for `request` (kDefault or kNames). accepts(name): CUPTI
// takes the name alone; one_pass(names): CUPTI takes them all and they need a
// single pass. The default set: every question's first candidate when they
// fit together, else per question the first accepted, the last questions
// dropped until one pass. A named set is taken whole or not at all (unknown
// names, or more than one pass).
GpuMetricChoice ChooseGpuMetrics(
    const GpuMetricsRequest& request, const std::function<bool(const std::string&)>& accepts,
    const std::function<bool(const std::vector<std::string>&)>& one_pass);

// A metric's name without the prefix of its trigger and unit, as ncu lists
// the PM sampling metrics of some chips: "TPC.TriageCompute.sm__cycles_active.avg"
// and "pmsampling:sm__cycles_active.avg" are "sm__cycles_active.avg" (the
// label of a metric the user named).
std::string_view GpuMetricShortName(std::string_view name);

// The unit a metric name's suffix says (prefix ignored): "%" (.pct*), "/s"
// (.per_second), "/cycle" (.per_cycle*), "cycles" (a counter of cycles with a
// plain rollup: .avg, .sum, .min, .max), "" otherwise.
std::string GpuMetricUnitOfName(std::string_view name);

// One line per fact of a choice, for the capture's messages and summary:
// "kept: SM active (sm__cycles_active...), ...", "dropped to fit one pass: ...".
std::vector<std::string> DescribeGpuMetricChoice(const GpuMetricChoice& choice);

}  // namespace tracesmith::capture
