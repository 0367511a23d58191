// The real GPU sample (examples/traces/mlp_train.sbt: a 5-step PyTorch MLP
// training run captured on an H200): the report against independent
// computations from the raw rows, and the text report against its golden files
// (the whole trace, and the window `analyze` uses by default).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "golden_check.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::analysis {
namespace {

std::string SamplePath() {
  const char* src = std::getenv("TS_SOURCE_DIR");
  return std::string(src ? src : ".") + "/examples/traces/mlp_train.sbt";
}

// Busy time of device 0 by sorting all op intervals and merging.
uint64_t PlainBusy(const model::Trace& t) {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  for (const auto& k : t.Rows<model::KernelEvent>()) v.push_back({k.start_ns, k.end_ns});
  for (const auto& m : t.Rows<model::MemcpyEvent>()) v.push_back({m.start_ns, m.end_ns});
  for (const auto& m : t.Rows<model::MemsetEvent>()) v.push_back({m.start_ns, m.end_ns});
  std::sort(v.begin(), v.end());
  uint64_t busy = 0, cs = 0, ce = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i && v[i].first <= ce) {
      ce = std::max(ce, v[i].second);
      continue;
    }
    busy += ce - cs;
    cs = v[i].first, ce = v[i].second;
  }
  return busy + (ce - cs);
}

TEST(RealTraceTest, MlpTrainSample) {
  if (!std::filesystem::exists(SamplePath())) GTEST_SKIP() << SamplePath() << " not present";
  auto rows = format::ReadTraceFile(SamplePath());
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  CompactTrace c;
  ASSERT_TRUE(LoadCompactTrace(SamplePath(), {}, &c).ok());
  AnalysisReport r = BuildReport(c, "examples/traces/mlp_train.sbt");

  const auto& kernels = rows->Rows<model::KernelEvent>();
  uint64_t total = 0;
  for (const auto& k : kernels) total += k.end_ns - k.start_ns;
  EXPECT_EQ(r.kernel_count, kernels.size());
  EXPECT_EQ(r.kernel_ns, total);
  uint64_t counted = 0;
  for (const NamedStats& n : r.kernels) counted += n.stats.count;
  EXPECT_EQ(counted, kernels.size());
  ASSERT_EQ(r.timeline.devices.size(), 1u);
  const DeviceTimeline& d = r.timeline.devices[0];
  EXPECT_EQ(d.busy_ns, PlainBusy(*rows));
  EXPECT_EQ(d.busy_ns + d.idle.total_ns(), r.wall_ns());
  uint64_t copies = 0, bytes = 0, copy_bytes = 0;
  for (const CopyStats& s : r.copies) copies += s.count, bytes += s.bytes;
  for (const auto& m : rows->Rows<model::MemcpyEvent>()) copy_bytes += m.bytes;
  for (const auto& m : rows->Rows<model::MemsetEvent>()) copy_bytes += m.bytes;
  EXPECT_EQ(copies,
            rows->Rows<model::MemcpyEvent>().size() + rows->Rows<model::MemsetEvent>().size());
  EXPECT_EQ(bytes, copy_bytes);
  uint64_t path = 0;
  for (uint64_t ns : r.critical_path_ns) path += ns;
  EXPECT_EQ(path, r.wall_ns());
  for (const StreamTimeline& s : r.timeline.streams) {
    uint64_t sum = 0;
    for (uint64_t ns : s.state_ns) sum += ns;
    EXPECT_EQ(sum, r.wall_ns());
  }
  EXPECT_GE(r.findings.size(), 3u);

  CheckGolden(r, "mlp_train");
}

// The analysis window `analyze` uses by default (start-up, warm-up and teardown apart): the
// first three steps are the warm-up (388, 19 and 13 ms against a median of 5.8 ms), so the
// window runs from step 4 to the last GPU op, and the headline busy share is the steady steps'.
TEST(RealTraceTest, WarmupIsNotSteadyState) {
  if (!std::filesystem::exists(SamplePath())) GTEST_SKIP() << SamplePath() << " not present";
  LoadOptions cli;
  cli.active_region = true;
  cli.steady_state = true;
  CompactTrace c;
  ASSERT_TRUE(LoadCompactTrace(SamplePath(), cli, &c).ok());
  AnalysisReport r = BuildReport(c, "examples/traces/mlp_train.sbt");
  ASSERT_TRUE(r.warmup_apart());
  ASSERT_EQ(r.steps.steps.size(), 10u);
  EXPECT_EQ(r.steps.warmup, 3u);
  EXPECT_EQ(r.steps.outliers, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(r.window_begin, r.steps.steps[3].begin_ns);
  EXPECT_EQ(r.active.warmup.begin, r.active.startup.end);  // the first kernel
  EXPECT_EQ(r.active.warmup.end, r.window_begin);
  // Seven steps of 108 kernels, and 4 after the last step (less than half an iteration: not a
  // step, but in the window).
  EXPECT_EQ(r.kernel_count, 7u * 108u + 4u);
  const DeviceTimeline& d = r.timeline.devices.at(0);
  EXPECT_EQ(d.busy_ns + d.idle.total_ns(), r.wall_ns());
  uint64_t steady_busy = 0, steady_ns = 0;
  for (size_t i = 3; i < 10; ++i)
    steady_busy += r.steps.steps[i].gpu_busy_ns, steady_ns += r.steps.steps[i].ns();
  EXPECT_NEAR(Percent(d.busy_ns, r.wall_ns()), Percent(steady_busy, steady_ns), 0.5);
  EXPECT_TRUE(r.findings.at(0).starts_with(
      StrFormat("GPU 0 is busy %.1f%% of the 38.274 ms steady-state window (from step 4)",
                Percent(d.busy_ns, r.wall_ns()))))
      << r.findings[0];
  CheckGolden(r, "mlp_train_default");
}

// Start-up apart (issue #14): the sample's first kernel comes ~4.8 s after
// its first event (weights uploaded at +13 ms, then host work); the default
// window of `analyze` runs from that kernel to the last GPU op, and the
// start-up is reported with its CUDA API share.
TEST(RealTraceTest, StartupIsNotSteadyState) {
  if (!std::filesystem::exists(SamplePath())) GTEST_SKIP() << SamplePath() << " not present";
  auto rows = format::ReadTraceFile(SamplePath());
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  uint64_t first_kernel = UINT64_MAX, last_op = 0, first_event = UINT64_MAX;
  for (const auto& k : rows->Rows<model::KernelEvent>()) {
    first_kernel = std::min(first_kernel, k.start_ns);
    last_op = std::max(last_op, k.end_ns);
  }
  for (const auto& m : rows->Rows<model::MemcpyEvent>()) last_op = std::max(last_op, m.end_ns);
  for (const auto& m : rows->Rows<model::MemsetEvent>()) last_op = std::max(last_op, m.end_ns);
  for (const auto& a : rows->Rows<model::ApiEvent>())
    first_event = std::min(first_event, a.start_ns);

  LoadOptions active;
  active.active_region = true;
  CompactTrace c;
  ASSERT_TRUE(LoadCompactTrace(SamplePath(), active, &c).ok());
  AnalysisReport r = BuildReport(c, "sample");
  ASSERT_TRUE(r.active.applied);
  EXPECT_EQ(r.window_begin, first_kernel);
  EXPECT_EQ(r.window_end, last_op);
  EXPECT_EQ(r.active.startup.begin, first_event);
  EXPECT_EQ(r.active.startup.end, first_kernel);
  EXPECT_GT(r.active.startup.ns(), 4000000000ull);
  // Mostly host work outside CUDA calls: the uploads and launches take ms.
  EXPECT_LT(r.active.startup.api_ns, r.active.startup.ns() / 20);
  EXPECT_EQ(r.kernel_count, rows->Rows<model::KernelEvent>().size());  // every kernel is inside
  // Busy share of the active window, not of the whole trace.
  const DeviceTimeline& d = r.timeline.devices.at(0);
  EXPECT_EQ(d.busy_ns + d.idle.total_ns(), r.wall_ns());
  EXPECT_GT(Percent(d.busy_ns, r.wall_ns()), 1.0);
  bool said = false;
  for (const std::string& f : r.findings) said |= f.rfind("Start-up took 4.", 0) == 0;
  EXPECT_TRUE(said);
  std::ostringstream text;
  WriteTextReport(r, AnalyzeOptions{}, text);
  EXPECT_NE(text.str().find("Start-up: +0 ns .. +4."), std::string::npos) << text.str();

  // --whole: the old window, nothing set apart.
  LoadOptions whole = active;
  whole.whole = true;
  CompactTrace w;
  ASSERT_TRUE(LoadCompactTrace(SamplePath(), whole, &w).ok());
  EXPECT_FALSE(w.active_region().applied);
  EXPECT_EQ(w.window_begin(), w.trace_begin());
}

}  // namespace
}  // namespace tracesmith::analysis
