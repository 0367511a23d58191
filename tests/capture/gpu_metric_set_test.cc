// --gpu-metrics without a GPU (capture/gpu_metric_set.h): the option's
// parsing and travel to the injection library, the default set, and the
// choice of what a device samples, against a fake CUPTI that accepts some
// names and fits some sets in one pass.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

#include "tracesmith/capture/capture_options.h"
#include "tracesmith/capture/gpu_metric_set.h"

namespace tracesmith::capture {
namespace {

using Kind = GpuMetricsRequest::Kind;

TEST(GpuMetricsOption, Parses) {
  EXPECT_EQ(ParseGpuMetrics("")->kind, Kind::kDefault);
  EXPECT_EQ(ParseGpuMetrics("default")->kind, Kind::kDefault);
  EXPECT_EQ(ParseGpuMetrics("list")->kind, Kind::kList);
  auto named = ParseGpuMetrics("a__b.sum, c__d.avg.pct_of_peak_sustained_elapsed,a__b.sum");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->kind, Kind::kNames);
  EXPECT_EQ(named->names,
            (std::vector<std::string>{"a__b.sum", "c__d.avg.pct_of_peak_sustained_elapsed"}));
  EXPECT_EQ(GpuMetricsText(*named), "a__b.sum,c__d.avg.pct_of_peak_sustained_elapsed");
  for (const char* bad : {"a,,b", ",", "a;b", "sm active"}) {
    auto r = ParseGpuMetrics(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--gpu-metrics"), std::string::npos);
    EXPECT_NE(r.status().message().find("'list'"), std::string::npos);
  }
}

TEST(GpuMetricsOption, IntervalRange) {
  EXPECT_EQ(ParseGpuMetricsInterval("100us").value(), 100'000u);
  EXPECT_EQ(ParseGpuMetricsInterval("10us").value(), 10'000u);
  EXPECT_EQ(ParseGpuMetricsInterval("1s").value(), 1'000'000'000u);
  for (const char* bad : {"9us", "2s", "0", "fast"}) {
    auto r = ParseGpuMetricsInterval(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--gpu-metrics-interval"), std::string::npos) << bad;
  }
  EXPECT_NE(ParseGpuMetricsInterval("5us").status().message().find("10us..1s"), std::string::npos);
}

TEST(GpuMetricsOption, TravelsThroughTheEnvironment) {
  CaptureOptions o;
  EXPECT_EQ(OptionsToEnv(o).count(kEnvGpuMetrics), 0u);
  o.gpu_metrics = ParseGpuMetrics("x__y.sum,z__w.avg").value();
  o.gpu_metrics_interval_ns = 250'000;
  auto back = OptionsFromEnv(OptionsToEnv(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->gpu_metrics, o.gpu_metrics);
  EXPECT_EQ(back->gpu_metrics_interval_ns, 250'000u);
  o.gpu_metrics.kind = Kind::kDefault;
  back = OptionsFromEnv(OptionsToEnv(o));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->gpu_metrics.kind, Kind::kDefault);
  EXPECT_FALSE(OptionsFromEnv({{kEnvGpuMetrics, "list"}}).ok());  // not a capture
  EXPECT_FALSE(OptionsFromEnv({{kEnvGpuMetrics, "default"}, {kEnvGpuMetricsInterval, "1us"}}).ok());
  EXPECT_EQ(TuningFromEnv({{kEnvGpuMetricsHwBufferMb, "8"}}).gpu_metrics_hw_buffer_mb, 8u);
  EXPECT_EQ(TuningFromEnv({{kEnvGpuMetricsImageSamples, "64"}}).gpu_metrics_image_samples, 64u);
  EXPECT_EQ(TuningFromEnv({{kEnvGpuMetricsDecodeMs, "2"}}).gpu_metrics_decode_ms, 2u);
  EXPECT_EQ(TuningFromEnv({{kEnvGpuMetricsDecodeMs, "x"}}).gpu_metrics_decode_ms, 0u);
  EXPECT_EQ(TuningFromEnv({{kEnvActivityBufferKb, "1024"}}).activity_buffer_kb, 1024u);
  EXPECT_TRUE(TuningFromEnv({}).buffer_prefault);
  EXPECT_FALSE(TuningFromEnv({{kEnvBufferPrefault, "0"}}).buffer_prefault);
  EXPECT_FALSE(TuningFromEnv({}).slow_call_probe);
  EXPECT_TRUE(TuningFromEnv({{kEnvSlowCallProbe, "1"}}).slow_call_probe);
  EXPECT_TRUE(TuningFromEnv({}).batch_threads);
  EXPECT_FALSE(TuningFromEnv({{kEnvBatchThreads, "0"}}).batch_threads);
}

TEST(GpuMetricSet, DefaultSetAnswersTheIssuesQuestions) {
  std::set<std::string> labels;
  for (const GpuMetricQuestion& q : DefaultGpuMetricQuestions()) {
    EXPECT_FALSE(q.candidates.empty()) << q.label;
    EXPECT_TRUE(labels.insert(q.label).second) << q.label;
  }
  for (const char* l :
       {"SM active", "SM throughput", "Warps resident (occupancy)", "Tensor pipe active",
        "FP32 pipe active", "FP64 pipe active", "DRAM read throughput", "DRAM write throughput",
        "L2 throughput", "PCIe read", "PCIe write", "NVLink rx", "NVLink tx"})
    EXPECT_EQ(labels.count(l), 1u) << l;
}

// The first candidates are GH100's names (ncu --query-metrics-collection pmsampling --chip
// gh100, with their unit's prefix); the unprefixed names stay as later candidates.
TEST(GpuMetricSet, FirstCandidatesAreGh100Names) {
  std::map<std::string, std::pair<std::string, std::string>> first;  // label -> (name, unit)
  std::set<std::string> later;
  for (const GpuMetricQuestion& q : DefaultGpuMetricQuestions()) {
    first[q.label] = {q.candidates.front().name, q.candidates.front().unit};
    for (size_t i = 1; i < q.candidates.size(); ++i) later.insert(q.candidates[i].name);
  }
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(first["SM active"], (P{"TPC.TriageCompute.sm__cycles_active.avg", "cycles"}));
  EXPECT_EQ(
      first["SM throughput"],
      (P{"TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed", "%"}));
  EXPECT_EQ(first["Warps resident (occupancy)"],
            (P{"TPC.TriageCompute.tpc__warps_active_realtime.avg.per_cycle_active", "warps"}));
  EXPECT_EQ(first["Tensor pipe active"].first,
            "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_"
            "elapsed");
  EXPECT_EQ(first["FP32 pipe active"].first,
            "TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_"
            "elapsed");
  EXPECT_EQ(first["FP64 pipe active"].first,
            "TPC.TriageCompute.sm__pipe_fp64_cycles_active_realtime.avg.pct_of_peak_sustained_"
            "elapsed");
  EXPECT_EQ(first["DRAM read throughput"].first,
            "FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(first["DRAM write throughput"].first,
            "FBSP.TriageCompute.dramc__write_throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(first["DRAM throughput"].first,
            "FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(first["L2 throughput"].first,
            "LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(first["PCIe read"],
            (P{"PCI.TriageCompute.pcie__read_bytes.sum.per_second", "bytes/s"}));
  EXPECT_EQ(first["PCIe write"],
            (P{"PCI.TriageCompute.pcie__write_bytes.sum.per_second", "bytes/s"}));
  EXPECT_EQ(first["NVLink rx"].first, "NVLRX.TriageCompute.nvlrx__bytes.sum.per_second");
  EXPECT_EQ(first["NVLink tx"].first, "NVLTX.TriageCompute.nvltx__bytes.sum.per_second");
  for (const char* older :
       {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
        "dramc__throughput.avg.pct_of_peak_sustained_elapsed",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed", "pcie__read_bytes.sum.per_second",
        "nvltx__bytes.sum.per_second"})
    EXPECT_EQ(later.count(older), 1u) << older;
}

// A fake chip: accepts the names in `known`, and sets of them of at most
// `per_pass` metrics in one pass.
struct FakeChip {
  std::set<std::string> known;
  size_t per_pass = 100;
  bool Accepts(const std::string& n) const { return known.count(n) > 0; }
  bool OnePass(const std::vector<std::string>& names) const {
    for (const std::string& n : names)
      if (!Accepts(n)) return false;  // CUPTI refuses the set
    return names.size() <= per_pass;
  }
};

GpuMetricChoice ChooseOn(const FakeChip& chip, const GpuMetricsRequest& r) {
  return ChooseGpuMetrics(
      r, [&](const std::string& n) { return chip.Accepts(n); },
      [&](const std::vector<std::string>& v) { return chip.OnePass(v); });
}

// An H200 as ncu lists its PM sampling metrics: every first (GH100) candidate in one pass.
TEST(GpuMetricSet, Gh100TakesItsNamesInOnePass) {
  FakeChip chip;
  for (const GpuMetricQuestion& q : DefaultGpuMetricQuestions())
    chip.known.insert(q.candidates.front().name);
  GpuMetricChoice c = ChooseOn(chip, {Kind::kDefault, {}});
  ASSERT_EQ(c.kept.size(), DefaultGpuMetricQuestions().size());
  EXPECT_EQ(c.kept[0],
            (ChosenGpuMetric{"TPC.TriageCompute.sm__cycles_active.avg", "SM active", "cycles", 1}));
  EXPECT_TRUE(c.dropped.empty() && c.unanswered.empty());
  auto lines = DescribeGpuMetricChoice(c);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("sampled: SM active (TPC.TriageCompute.sm__cycles_active.avg), ", 0), 0u)
      << lines[0];
}

TEST(GpuMetricSet, DefaultKeepsTheFirstAcceptedCandidatePerQuestion) {
  FakeChip chip;
  chip.known = {"sm__cycles_active.avg.per_cycle_elapsed",
                "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
                "dramc__throughput.avg.pct_of_peak_sustained_elapsed",
                "dram__throughput.avg.pct_of_peak_sustained_elapsed"};
  GpuMetricChoice c = ChooseOn(chip, {Kind::kDefault, {}});
  ASSERT_EQ(c.kept.size(), 3u);
  EXPECT_EQ(c.kept[0],
            (ChosenGpuMetric{"sm__cycles_active.avg.per_cycle_elapsed", "SM active", "%", 100}));
  EXPECT_EQ(c.kept[1].label, "Tensor pipe active");
  EXPECT_EQ(c.kept[2].name, "dramc__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(c.unanswered.size(), DefaultGpuMetricQuestions().size() - 3);
  EXPECT_TRUE(c.dropped.empty());
  auto lines = DescribeGpuMetricChoice(c);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("sampled: SM active (sm__cycles_active", 0), 0u) << lines[0];
  EXPECT_NE(lines[1].find("not available on this GPU: SM throughput, Warps resident"),
            std::string::npos);
}

TEST(GpuMetricSet, DefaultDropsTheLowestPriorityUntilOnePass) {
  FakeChip chip;
  for (const GpuMetricQuestion& q : DefaultGpuMetricQuestions())
    chip.known.insert(q.candidates.front().name);
  chip.per_pass = 4;
  GpuMetricChoice c = ChooseOn(chip, {Kind::kDefault, {}});
  ASSERT_EQ(c.kept.size(), 4u);
  EXPECT_EQ(c.kept[0].label, "SM active");
  EXPECT_EQ(c.dropped.size(), DefaultGpuMetricQuestions().size() - 4);
  EXPECT_EQ(c.dropped.front().rfind("NVLink tx (", 0), 0u) << c.dropped.front();
  EXPECT_TRUE(c.unanswered.empty());
  chip.per_pass = 0;  // not even one metric fits
  c = ChooseOn(chip, {Kind::kDefault, {}});
  EXPECT_TRUE(c.empty());
}

TEST(GpuMetricSet, DefaultTakesEveryFirstCandidateWhenTheyFitTogether) {
  FakeChip chip;
  for (const GpuMetricQuestion& q : DefaultGpuMetricQuestions())
    for (const GpuMetricCandidate& m : q.candidates) chip.known.insert(m.name);
  int questions = 0;
  GpuMetricChoice c = ChooseGpuMetrics(
      {Kind::kDefault, {}},
      [&](const std::string& n) {
        ++questions;
        return chip.Accepts(n);
      },
      [&](const std::vector<std::string>& v) {
        ++questions;
        return chip.OnePass(v);
      });
  EXPECT_EQ(questions, 1);
  ASSERT_EQ(c.kept.size(), DefaultGpuMetricQuestions().size());
  for (size_t i = 0; i < c.kept.size(); ++i)
    EXPECT_EQ(c.kept[i].name, DefaultGpuMetricQuestions()[i].candidates.front().name);
  EXPECT_TRUE(c.dropped.empty() && c.unanswered.empty());
}

TEST(GpuMetricSet, NamedSetIsTakenWholeOrNotAtAll) {
  FakeChip chip;
  chip.known = {"a__x.sum.per_second", "b__y.avg.pct_of_peak_sustained_elapsed", "c__z.sum"};
  GpuMetricChoice ok = ChooseOn(chip, ParseGpuMetrics("a__x.sum.per_second,c__z.sum").value());
  ASSERT_EQ(ok.kept.size(), 2u);
  EXPECT_EQ(ok.kept[0].unit, "/s");
  EXPECT_EQ(ok.kept[1].unit, "");
  EXPECT_EQ(ok.kept[0].label, "a__x.sum.per_second");

  // Names as ncu lists them on GH100: labelled without the prefix, unit from the suffix.
  chip.known = {"TPC.TriageCompute.sm__cycles_active.avg",
                "pmsampling:FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_"
                "elapsed"};
  GpuMetricChoice gh = ChooseOn(
      chip, ParseGpuMetrics("TPC.TriageCompute.sm__cycles_active.avg,pmsampling:FBSP."
                            "TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_"
                            "elapsed")
                .value());
  ASSERT_EQ(gh.kept.size(), 2u);
  EXPECT_EQ(gh.kept[0], (ChosenGpuMetric{"TPC.TriageCompute.sm__cycles_active.avg",
                                         "sm__cycles_active.avg", "cycles", 1}));
  EXPECT_EQ(gh.kept[1].label, "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(gh.kept[1].unit, "%");
  chip.known = {"a__x.sum.per_second", "b__y.avg.pct_of_peak_sustained_elapsed", "c__z.sum"};

  GpuMetricChoice unknown =
      ChooseOn(chip, ParseGpuMetrics("a__x.sum.per_second,nope,nada").value());
  EXPECT_TRUE(unknown.empty());
  EXPECT_EQ(unknown.unknown, (std::vector<std::string>{"nope", "nada"}));
  auto lines = DescribeGpuMetricChoice(unknown);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("nope, nada"), std::string::npos);
  EXPECT_NE(lines[0].find("--gpu-metrics=list"), std::string::npos);

  chip.per_pass = 1;
  GpuMetricChoice two = ChooseOn(chip, ParseGpuMetrics("a__x.sum.per_second,c__z.sum").value());
  EXPECT_TRUE(two.empty());
  EXPECT_TRUE(two.multi_pass);
  EXPECT_NE(DescribeGpuMetricChoice(two)[0].find("more than one pass"), std::string::npos);
}

TEST(GpuMetricSet, UnitOfName) {
  EXPECT_EQ(GpuMetricUnitOfName("lts__throughput.avg.pct_of_peak_sustained_elapsed"), "%");
  EXPECT_EQ(GpuMetricUnitOfName("lts__t_sector_hit_rate.pct"), "%");
  EXPECT_EQ(GpuMetricUnitOfName("pcie__read_bytes.sum.per_second"), "/s");
  EXPECT_EQ(GpuMetricUnitOfName("sm__cycles_active.avg"), "cycles");
  EXPECT_EQ(GpuMetricUnitOfName("lts__t_sectors.sum"), "");
  EXPECT_EQ(GpuMetricUnitOfName("TPC.TriageCompute.sm__cycles_active.avg"), "cycles");
  EXPECT_EQ(GpuMetricUnitOfName("PCI.TriageCompute.pcie__read_bytes.sum.per_second"), "/s");
  EXPECT_EQ(
      GpuMetricUnitOfName("TPC.TriageCompute.tpc__warps_active_realtime.avg.per_cycle_active"),
      "/cycle");
  EXPECT_EQ(
      GpuMetricUnitOfName("LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed"),
      "%");
}

TEST(GpuMetricSet, ShortNameDropsTheUnitPrefix) {
  EXPECT_EQ(GpuMetricShortName("TPC.TriageCompute.sm__cycles_active.avg"), "sm__cycles_active.avg");
  EXPECT_EQ(GpuMetricShortName("NVLRX.TriageCompute.nvlrx__bytes.sum.per_second"),
            "nvlrx__bytes.sum.per_second");
  EXPECT_EQ(GpuMetricShortName("pmsampling:sm__cycles_active.avg"), "sm__cycles_active.avg");
  EXPECT_EQ(GpuMetricShortName("pmsampling:FBSP.TriageCompute.dramc__throughput.avg"),
            "dramc__throughput.avg");
  EXPECT_EQ(GpuMetricShortName("lts__throughput.avg.pct_of_peak_sustained_elapsed"),
            "lts__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(GpuMetricShortName("plain"), "plain");
}

}  // namespace
}  // namespace tracesmith::capture
