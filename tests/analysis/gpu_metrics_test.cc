// `analyze`'s "GPU metrics" (analysis/gpu_metrics.h) on the hand-built trace
// of testing/gpu_metric_trace.h: whole-run means, and per kernel name the
// metrics while it ran alone on its GPU and while it shared it, in the text
// and the JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/gpu_metric_trace.h"
#include "tracesmith/analysis/report.h"

namespace tracesmith::analysis {
namespace {

AnalysisReport AnalyzeGpuMetricTrace(const ::tracesmith::testing::GpuMetricTraceOptions& o = {}) {
  CompactTrace c;
  c.IngestAll(::tracesmith::testing::GpuMetricTrace(o));
  c.Finalize();
  return BuildReport(c, "metrics.sbt");
}

const GpuMetricKernel& KernelNamed(const GpuMetricsReport& g, const std::string& name) {
  for (const GpuMetricKernel& k : g.kernels)
    if (k.name == name) return k;
  ADD_FAILURE() << "no kernel " << name;
  return g.kernels.at(0);
}

TEST(GpuMetricsReport, WholeRunMeansAndPerKernelAloneAndShared) {
  const AnalysisReport r = AnalyzeGpuMetricTrace();
  const GpuMetricsReport& g = r.gpu_metrics;
  ASSERT_EQ(g.metrics.size(), 3u);
  EXPECT_EQ(g.samples, 70u * 3);
  EXPECT_EQ(g.merged, 1u);
  // The window is the kernels' span, [1000, 6000): 50 samples of each metric.
  EXPECT_EQ(g.metrics[0].label, "SM active");
  EXPECT_EQ(g.metrics[0].unit, "%");
  EXPECT_EQ(g.metrics[0].samples, 50u);
  EXPECT_DOUBLE_EQ(g.metrics[0].mean, 75.0);
  EXPECT_DOUBLE_EQ(g.metrics[0].max, 100.0);
  EXPECT_DOUBLE_EQ(g.metrics[1].mean, 24.0);
  EXPECT_DOUBLE_EQ(g.metrics[2].mean, 28.0);
  ASSERT_EQ(g.columns.size(), 3u);
  EXPECT_EQ(GpuMetricHeading(g, 1), "Tensor pipe active");

  ASSERT_EQ(g.kernels.size(), 3u);
  EXPECT_EQ(g.kernels[2].name, "copy");  // the shortest last
  const GpuMetricKernel& gemm = KernelNamed(g, "gemm");
  EXPECT_EQ(gemm.alone_ns, 1000u);
  EXPECT_EQ(gemm.shared_ns, 1000u);
  EXPECT_DOUBLE_EQ(gemm.alone[0], 95.0);
  EXPECT_DOUBLE_EQ(gemm.alone[1], 70.0);
  EXPECT_DOUBLE_EQ(gemm.alone[2], 20.0);
  EXPECT_DOUBLE_EQ(gemm.shared[1], 50.0);
  const GpuMetricKernel& fma = KernelNamed(g, "fma");
  EXPECT_DOUBLE_EQ(fma.alone[1], 0.0);  // no tensor work while the FMA chain ran alone
  EXPECT_DOUBLE_EQ(fma.shared[0], 100.0);
  const GpuMetricKernel& copy = KernelNamed(g, "copy");
  EXPECT_EQ(copy.shared_ns, 0u);
  EXPECT_DOUBLE_EQ(copy.alone[2], 85.0);
  EXPECT_TRUE(std::isnan(copy.shared[2]));
}

// Samples longer than the phases straddle the kernels' edges: each counts by
// its overlap. copy [1000, 2000) sees three samples at 90 and 100 ns of one
// at 0 (the idle gap's): 81.
TEST(GpuMetricsReport, SamplesCountByTheirOverlap) {
  const AnalysisReport r = AnalyzeGpuMetricTrace({.period_ns = 300});
  EXPECT_DOUBLE_EQ(KernelNamed(r.gpu_metrics, "copy").alone[0], 81.0);
}

TEST(GpuMetricsReport, TextAndJson) {
  const AnalysisReport r = AnalyzeGpuMetricTrace();
  std::ostringstream text;
  WriteTextReport(r, {}, text);
  const std::string s = text.str();
  EXPECT_NE(s.find("\nGPU metrics (PM sampling: 210 metric samples)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  GPU 0        SM active                                 75.0%       "
                   "100.0%        50\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\"shared\": while other kernels ran beside it"), std::string::npos);
  EXPECT_NE(s.find("  gemm\n    alone  1.000 us (50%): SM active 95.0%, Tensor pipe active 70.0%, "
                   "DRAM throughput 20.0%\n    shared 1.000 us (50%): SM active 100.0%, Tensor "
                   "pipe active 50.0%, DRAM throughput 30.0%\n"),
            std::string::npos)
      << s;

  std::ostringstream json;
  WriteJsonReport(r, json);
  const auto j = nlohmann::json::parse(json.str());
  const auto& g = j.at("gpu_metrics");
  EXPECT_EQ(g.at("samples"), 210);
  EXPECT_EQ(g.at("metrics").size(), 3u);
  EXPECT_EQ(g.at("metrics")[0].at("label"), "SM active");
  EXPECT_DOUBLE_EQ(g.at("metrics")[2].at("mean").get<double>(), 28.0);
  bool copy_seen = false;
  for (const auto& k : g.at("kernels")) {
    if (k.at("name") != "copy") continue;
    copy_seen = true;
    EXPECT_DOUBLE_EQ(
        k.at("alone").at("dramc__throughput.avg.pct_of_peak_sustained_elapsed").get<double>(),
        85.0);
    EXPECT_TRUE(k.at("shared").at("dramc__throughput.avg.pct_of_peak_sustained_elapsed").is_null());
  }
  EXPECT_TRUE(copy_seen);
}

// Rule 15: copy (85% DRAM alone) is memory-bound, gemm (70% tensor alone
// until fma joins, half its time) keeps the tensor pipes busy; fma has no SM
// throughput column to judge by.
TEST(GpuMetricsReport, FindingsPerKernel) {
  const AnalysisReport r = AnalyzeGpuMetricTrace();
  std::string all;
  for (const std::string& f : r.findings) all += f + "\n";
  EXPECT_NE(all.find("Kernel copy (20.0% of GPU time, alone on its GPU 100% of it) ran DRAM at "
                     "85% of its peak bandwidth: memory-bound"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("Kernel gemm (40.0% of GPU time, alone on its GPU 50% of it) kept the "
                     "tensor pipes 70% active"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("Kernel fma ("), std::string::npos) << all;
}

// Per step: step 1 is copy then idle, step 2 gemm (alone, then with fma),
// step 3 fma alone then idle: the phases' values weighted by their time.
TEST(GpuMetricsReport, PerStepMeansInTextAndJson) {
  const AnalysisReport r = AnalyzeGpuMetricTrace({.steps = true});
  ASSERT_EQ(r.steps.steps.size(), 3u) << r.steps.method;
  const GpuMetricsReport& g = r.gpu_metrics;
  ASSERT_EQ(g.steps.size(), 3u);
  const double want[3][3] = {{45, 0, 42.5}, {97.5, 60, 25}, {30, 0, 5.0 / 3}};
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(g.steps[s].number, uint32_t(s + 1));
    ASSERT_EQ(g.steps[s].values.size(), 3u);
    for (size_t c = 0; c < 3; ++c) EXPECT_NEAR(g.steps[s].values[c], want[s][c], 1e-9) << s << c;
  }
  std::ostringstream text;
  WriteTextReport(r, AnalyzeOptions{}, text);
  EXPECT_NE(text.str().find("Per step (time-weighted means over each step, every GPU)"),
            std::string::npos)
      << text.str();
  std::ostringstream js;
  WriteJsonReport(r, js);
  const nlohmann::json doc = nlohmann::json::parse(js.str());
  const nlohmann::json& steps = doc.at("gpu_metrics").at("steps");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].at("step"), 2);
  EXPECT_DOUBLE_EQ(
      steps[1].at("values").at("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"),
      60.0);
}

TEST(GpuMetricsReport, AbsentWithoutSamples) {
  CompactTrace c;
  model::Trace t = ::tracesmith::testing::GpuMetricTrace();
  t.Rows<model::GpuMetricSample>().clear();
  c.IngestAll(t);
  c.Finalize();
  const AnalysisReport r = BuildReport(c, "plain.sbt");
  EXPECT_TRUE(r.gpu_metrics.empty());
  std::ostringstream text, json;
  WriteTextReport(r, {}, text);
  WriteJsonReport(r, json);
  EXPECT_EQ(text.str().find("GPU metrics"), std::string::npos);
  EXPECT_EQ(json.str().find("gpu_metrics"), std::string::npos);
}

TEST(GpuMetricSeries, CoarsensPastItsBudgetKeepingTheTimeWeightedMean) {
  GpuMetricSeries s;
  std::vector<model::GpuMetricSample> rows(GpuMetricSeries::kMaxPoints + 2);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].start_ns = i * 10;
    rows[i].end_ns = i * 10 + 10;
    rows[i].value = i % 2 ? 100 : 0;
    rows[i].metric_id = 1;
  }
  s.Add(rows);
  EXPECT_EQ(s.merged(), 2u);
  EXPECT_EQ(s.rows(), rows.size());
  const auto& points = s.series().begin()->second;
  EXPECT_EQ(points.size(), rows.size() / 2);
  EXPECT_DOUBLE_EQ(points[0].value, 50.0);
  EXPECT_EQ(points[0].end_ns, 20u);
}

}  // namespace
}  // namespace tracesmith::analysis
