// The report's paths that keep no per-event copy of the compact trace (docs/benchmarks.md,
// "100 M kernels"): values wider than 32 bits in the grouped statistics, a call that issued
// several ops, and steps measured from running totals, each against a plain computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "test_traces.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/analysis/steps.h"

namespace tracesmith::analysis {
namespace {

constexpr uint64_t kLong = 5'000'000'000;  // 5 s: past 32 bits of nanoseconds

const NamedStats* KernelNamed(const AnalysisReport& r, const std::string& name) {
  for (const NamedStats& k : r.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

const LaunchStats* LaunchesOf(const AnalysisReport& r, const std::string& api) {
  for (const LaunchStats& l : r.launches)
    if (l.api == api) return &l;
  return nullptr;
}

TEST(ReportStreamsTest, WideValuesAndACallWithSeveralOps) {
  testing::TraceBuilder b;
  b.Kernel("k", 0, 7, 30, 130, 10, 20);           // 100 ns, delay 20
  b.Kernel("k", 0, 7, 150, 350, 40, 50);          // 200 ns, delay 110
  b.Kernel("k", 0, 7, 400, 400 + kLong, 60, 70);  // 5 s, delay 340
  b.Api("cudaGraphLaunch", 80, 90, 99);           // two kernels, one correlation
  for (auto [stream, start] : {std::pair<uint32_t, uint64_t>{8, 6 * kLong / 5},
                               std::pair<uint32_t, uint64_t>{9, 11 * kLong / 10}}) {
    model::KernelEvent k{};
    k.pid = 100;
    k.device_id = 0;
    k.stream_id = stream;
    k.start_ns = start;
    k.end_ns = start + 10;
    k.correlation_id = 99;
    k.demangled_id = b.Str("g");
    b.trace().Rows<model::KernelEvent>().push_back(k);
  }
  b.Api("cudaLaunchKernel", 95, 99, 77);  // issued nothing: not a launch
  CompactTrace t;
  t.IngestAll(b.trace());
  t.Finalize();
  const AnalysisReport r = BuildReport(t, "wide");

  const NamedStats* k = KernelNamed(r, "k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->stats.count, 3u);
  EXPECT_EQ(k->stats.total_ns, kLong + 300);
  EXPECT_EQ(k->stats.max_ns, kLong);
  EXPECT_EQ(k->stats.p50_ns, 200u);
  EXPECT_EQ(k->stats.p95_ns, kLong);
  EXPECT_EQ(k->stats.mean_ns, (kLong + 300) / 3);

  const LaunchStats* launch = LaunchesOf(r, "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->api_duration.count, 3u);
  EXPECT_EQ(launch->api_duration.p50_ns, 10u);
  EXPECT_EQ(launch->launch_delay.count, 3u);
  EXPECT_EQ(launch->launch_delay.total_ns, 470u);
  EXPECT_EQ(launch->launch_delay.p50_ns, 110u);
  EXPECT_EQ(launch->launch_delay.max_ns, 340u);
  const LaunchStats* graph = LaunchesOf(r, "cudaGraphLaunch");
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(graph->api_duration.count, 1u);
  // The delay runs to the first of its ops (the second one listed).
  EXPECT_EQ(graph->launch_delay.max_ns, 11 * kLong / 10 - 80);
  EXPECT_EQ(graph->launch_delay.p50_ns, 11 * kLong / 10 - 80);
}

// Steps from ProfilerStep ranges (touching, overlapping, one inside another) over random ops
// on three streams: each step's busy time and kernels against a walk over its nanoseconds.
TEST(ReportStreamsTest, StepBusyTimeAndKernelsMatchAWalk) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    testing::TraceBuilder b;
    struct Op {
      uint64_t start, end;
      bool kernel;
    };
    std::vector<Op> ops;
    for (uint32_t stream = 1; stream <= 3; ++stream) {
      uint64_t t = rng() % 50;
      for (int i = 0; i < 30; ++i) {
        t += rng() % 40;
        const uint64_t len = rng() % 4 == 0 ? 0 : 1 + rng() % 60;
        const bool kernel = rng() % 5 != 0;
        if (kernel)
          b.Kernel("k" + std::to_string(rng() % 3), 0, stream, t, t + len, t, t + 1);
        else
          b.Memcpy(model::kCopyHtoD, 64, 0, stream, t, t + len, t, t + 1);
        ops.push_back({t, t + len, kernel});
        t += len / 2;  // ops of a stream may overlap
      }
    }
    std::vector<std::pair<uint64_t, uint64_t>> steps;
    uint64_t s = rng() % 100;
    for (int i = 0; i < 5; ++i) {
      const uint64_t len = 50 + rng() % 300;
      steps.push_back({s, s + len});
      s += rng() % 2 ? len : len / 2;  // touching or overlapping
    }
    steps.push_back({steps[1].first + 5, steps[1].first + 6});  // one inside another
    for (size_t i = 0; i < steps.size(); ++i)
      b.Nvtx("ProfilerStep#" + std::to_string(i), steps[i].first, steps[i].second);
    CompactTrace t;
    t.IngestAll(b.trace());
    t.Finalize();
    const StepReport r = DetectSteps(t);
    ASSERT_FALSE(r.steps.empty()) << "round " << round;
    for (const Step& step : r.steps) {
      uint64_t busy = 0;
      for (uint64_t ns = step.begin_ns; ns < step.end_ns; ++ns)
        busy += std::any_of(ops.begin(), ops.end(), [&](const Op& o) {
          return o.start <= ns && ns < o.end && ns >= t.window_begin() && ns < t.window_end();
        });
      uint32_t kernels = 0;
      for (const Op& o : ops)
        kernels += o.kernel && o.start >= step.begin_ns && o.start < step.end_ns;
      EXPECT_EQ(step.gpu_busy_ns, busy) << "round " << round << " step at " << step.begin_ns;
      EXPECT_EQ(step.kernels, kernels) << "round " << round << " step at " << step.begin_ns;
    }
  }
}

}  // namespace
}  // namespace tracesmith::analysis
