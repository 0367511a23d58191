// --gpu-metrics without a GPU (capture/gpu_metric_set.h): the option's
// parsing and travel to the injection library, the default set, and the
// choice of what a device samples, against a fake CUPTI that accepts some
// names and fits some sets in one pass.
#include <gtest/gtest.h>

#include <set>

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
}

TEST(GpuMetricSet, DefaultSetAnswersTheIssuesQuestions) {
  std::set<std::string> labels;
  for (const GpuMetricQuestion& q : DefaultGpuMetricQuestions()) {
    EXPECT_FALSE(q.candidates.empty()) << q.label;
    EXPECT_TRUE(labels.insert(q.label).second) << q.label;
  }
  for (const char* l :
       {"SM active", "Warps resident (occupancy)", "Tensor pipe active", "FP32 pipe active",
        "FP64 pipe active", "DRAM read throughput", "DRAM write throughput", "L2 throughput",
        "PCIe read", "PCIe write", "NVLink rx", "NVLink tx"})
    EXPECT_EQ(labels.count(l), 1u) << l;
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
  EXPECT_NE(lines[1].find("not available on this GPU: Warps resident"), std::string::npos);
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
  EXPECT_EQ(GpuMetricUnitOfName("sm__cycles_active.avg"), "");
}

}  // namespace
}  // namespace tracesmith::capture
