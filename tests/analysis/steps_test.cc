// Steps (issue #14 item 3): found in the real transformer capture from its
// repeating kernel sequence; --steps selects them.
#include "tracesmith/analysis/steps.h"
#include "testing/source_paths.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "test_traces.h"
#include "tracesmith/analysis/report.h"

namespace tracesmith::analysis {
namespace {

// A trace built by `b`, finalized, and its steps.
StepReport StepsOf(testing::TraceBuilder& b) {
  CompactTrace c;
  c.IngestAll(b.trace());
  c.Finalize();
  return DetectSteps(c);
}

// `iterations` of fwd, bwd, opt (20 ns apart, 200 ns of host work after
// each) on device 0, and on device 1 too (jittered) when `two_gpus`.
testing::TraceBuilder Iterations(int iterations, bool two_gpus) {
  testing::TraceBuilder b;
  uint64_t t = 0;
  for (int s = 0; s < iterations; ++s) {
    for (const char* k : {"fwd", "bwd", "opt"}) {
      b.Kernel(k, 0, 1, t, t + 10);
      if (two_gpus) b.Kernel(k, 1, 1, t + 3 + (s % 2) * 9, t + 13 + (s % 2) * 9);
      t += 20;
    }
    t += 200;
  }
  return b;
}

// 5 warm-up + 5 timed iterations of a bf16 TransformerEncoder step: 309
// kernels each once warm; the first iteration also initialises AdamW state.
TEST(StepsTest, RealTransformerTraceHasTenIterations) {
  const std::string path = tracesmith::testing::ExampleTracePath("transformer_train.sbt");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  LoadOptions o;
  o.active_region = true;
  CompactTrace c;
  ASSERT_TRUE(LoadCompactTrace(path, o, &c).ok());
  StepReport r = DetectSteps(c);
  EXPECT_EQ(r.method, "repeating kernel sequence");
  EXPECT_EQ(r.period, 309u);
  ASSERT_EQ(r.steps.size(), 10u);
  uint64_t kernels = 0;
  for (const GpuOp& op : c.ops()) kernels += op.kind() == OpKind::kKernel;
  uint64_t in_steps = 0;
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const Step& s = r.steps[i];
    in_steps += s.kernels;
    EXPECT_LE(s.gpu_busy_ns, s.ns());
    if (i > 0) {
      EXPECT_EQ(s.begin_ns, r.steps[i - 1].end_ns);  // steps tile the run
      EXPECT_EQ(s.kernels, 309u) << "step " << i + 1;
    }
  }
  // Every kernel of the window is in a step but the last few (less than half
  // an iteration after the last step: the program's final sync and loss).
  EXPECT_LE(in_steps, kernels);
  EXPECT_LT(2 * (kernels - in_steps), 309u);
  ASSERT_FALSE(r.outliers.empty());
  EXPECT_EQ(r.outliers[0], 0u);  // the first iteration
  EXPECT_LT(r.cv, 0.2);

  // --steps 3:10: the window is exactly those steps.
  LoadOptions some = o;
  some.steps = "3:10";
  CompactTrace w;
  ASSERT_TRUE(LoadCompactTrace(path, some, &w).ok());
  EXPECT_EQ(w.window_begin(), r.steps[2].begin_ns);
  EXPECT_EQ(w.window_end(), r.steps[9].end_ns);
  uint64_t selected = 0;
  for (const GpuOp& op : w.ops()) selected += op.kind() == OpKind::kKernel;
  EXPECT_EQ(selected, 8u * 309u);
  // The report keeps the run's numbering and bounds, not a new detection.
  StepReport chosen = DetectSteps(w);
  EXPECT_EQ(chosen.first_number, 3u);
  ASSERT_EQ(chosen.steps.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(chosen.steps[i].begin_ns, r.steps[i + 2].begin_ns);
    EXPECT_EQ(chosen.steps[i].kernels, 309u);
  }
}

// A run whose first step (the warm-up) is long: `step 0` over [0, 2000) with its three kernels
// far apart at 100, 1000 and 1900, then six steady steps of 100 ns from 2000 on, each with
// kernels at +10, +30, +50 (10 ns each: 30% busy), every kernel launched 10 ns before it starts.
testing::TraceBuilder LongFirstStep(bool long_first = true) {
  testing::TraceBuilder b;
  const uint64_t first = long_first ? 2000 : 100;
  b.Nvtx("step 0", 0, first);
  for (uint64_t k :
       long_first ? std::vector<uint64_t>{100, 1000, 1900} : std::vector<uint64_t>{10, 30, 50})
    b.Kernel(k == 100 || k == 10    ? "fwd"
             : k == 1000 || k == 30 ? "bwd"
                                    : "opt",
             0, 1, k, k + 10, k - 10, k - 5);
  for (uint64_t s = 1; s <= 6; ++s) {
    const uint64_t begin = first + (s - 1) * 100;
    b.Nvtx("step " + std::to_string(s), begin, begin + 100);
    b.Kernel("fwd", 0, 1, begin + 10, begin + 20, begin, begin + 5);
    b.Kernel("bwd", 0, 1, begin + 30, begin + 40, begin + 20, begin + 25);
    b.Kernel("opt", 0, 1, begin + 50, begin + 60, begin + 40, begin + 45);
  }
  return b;
}

struct Loaded {
  CompactTrace trace;
  AnalysisReport report;
  std::string text;
  nlohmann::json json;
};

// As `analyze` loads and reports a trace (LoadOptions as the CLI sets them; `steady_state` false
// is --with-warmup).
std::unique_ptr<Loaded> AnalyzeAsTheCli(testing::TraceBuilder& b, bool steady_state = true) {
  auto out = std::make_unique<Loaded>();
  out->trace.IngestAll(b.trace());
  out->trace.Finalize();
  LoadOptions o;
  o.active_region = true;
  o.steady_state = steady_state;
  EXPECT_TRUE(ApplyRestrictions(o, &out->trace).ok());
  out->report = BuildReport(out->trace, "t.sbt");
  std::ostringstream text, json;
  WriteTextReport(out->report, AnalyzeOptions{}, text);
  WriteJsonReport(out->report, json);
  out->text = text.str();
  out->json = nlohmann::json::parse(json.str());
  return out;
}

bool HasFinding(const AnalysisReport& r, const std::string& start) {
  for (const std::string& f : r.findings)
    if (f.starts_with(start)) return true;
  return false;
}

// The warm-up is set apart: the window is the steady steps, and the headline busy share, idle
// causes and critical path are theirs; the warm-up has its line, its finding and its JSON object,
// with the same numbers.
TEST(StepsTest, WarmupIsSetApartFromTheSteadyState) {
  testing::TraceBuilder b = LongFirstStep();
  auto a = AnalyzeAsTheCli(b);
  const AnalysisReport& r = a->report;
  // The window: from step 2 (at 2000) to the last kernel's end (2560).
  EXPECT_EQ(r.window_begin, 2000u);
  EXPECT_EQ(r.window_end, 2560u);
  ASSERT_TRUE(r.warmup_apart());
  EXPECT_EQ(r.active.warmup.begin, 100u);  // the first kernel
  EXPECT_EQ(r.active.warmup.end, 2000u);
  EXPECT_NEAR(r.warmup_share(), 100.0 * 1900 / 2460, 1e-9);
  // All seven steps, numbered from 1; step 1 measured before the cut.
  ASSERT_EQ(r.steps.steps.size(), 7u);
  EXPECT_EQ(r.steps.first_number, 1u);
  EXPECT_EQ(r.steps.warmup, 1u);
  EXPECT_EQ(r.steps.steps[0].gpu_busy_ns, 30u);
  EXPECT_EQ(r.steps.steps[0].kernels, 3u);
  EXPECT_EQ(r.steps.steps[1].gpu_busy_ns, 30u);
  EXPECT_EQ(r.steps.median_ns, 100u);
  EXPECT_EQ(r.steps.outliers, std::vector<uint32_t>{0});
  // Per-window figures are the steady steps': 6 x 30 ns busy of 560 ns, the rest waiting for
  // launches; the critical path tiles the 560 ns.
  ASSERT_EQ(r.timeline.devices.size(), 1u);
  EXPECT_EQ(r.timeline.devices[0].busy_ns, 180u);
  EXPECT_EQ(r.kernel_count, 18u);
  uint64_t path = 0;
  for (uint64_t ns : r.critical_path_ns) path += ns;
  EXPECT_EQ(path, 560u);
  // The headline is the steady state (32.1%; the whole active window would be 210 of 2460 ns:
  // 8.5%).
  ASSERT_FALSE(r.findings.empty());
  EXPECT_TRUE(r.findings[0].starts_with(
      "GPU 0 is busy 32.1% of the 560 ns steady-state window (from step 2); it is idle 67.9%"))
      << r.findings[0];
  EXPECT_TRUE(HasFinding(r,
                         "The warm-up took 1.900 us, 77.2% of the run from the first kernel to "
                         "the last GPU operation: step 1 at 20.0x the median step, the first "
                         "iteration's one-time work"));
  EXPECT_NE(a->text.find("\nWindow:   +2.000 us .. +2.560 us (560 ns), "), std::string::npos)
      << a->text;
  EXPECT_NE(a->text.find("the steady state, from step 2 (--with-warmup: from the first kernel"),
            std::string::npos);
  EXPECT_NE(a->text.find("\nWarm-up:  +100 ns .. +2.000 us (1.900 us): step 1, 77.2% of the run "
                         "from the first kernel; longest calls: "),
            std::string::npos)
      << a->text;
  EXPECT_NE(a->text.find("outlier, warm-up (not in the window)"), std::string::npos);
  // JSON: the steady window's bounds, and the warm-up with the text's numbers.
  EXPECT_EQ(a->json["window"]["begin_ns"], 2000u);
  EXPECT_EQ(a->json["window"]["wall_ns"], 560u);
  const nlohmann::json& w = a->json["warmup"];
  EXPECT_EQ(w["begin_ns"], 100u);
  EXPECT_EQ(w["end_ns"], 2000u);
  EXPECT_EQ(w["steps"], 1u);
  EXPECT_NEAR(w["share_pct"].get<double>(), r.warmup_share(), 1e-4);  // JSON keeps 4 decimals
  EXPECT_EQ(a->json["steps"]["warmup"], 1u);
  EXPECT_EQ(a->json["steps"]["list"].size(), 7u);
  EXPECT_EQ(a->json["findings"][0], r.findings[0]);

  // --with-warmup: the window from the first kernel, as before; nothing set apart.
  auto with = AnalyzeAsTheCli(b, false);
  EXPECT_EQ(with->report.window_begin, 100u);
  EXPECT_FALSE(with->report.warmup_apart());
  EXPECT_EQ(with->report.steps.warmup, 0u);
  EXPECT_TRUE(with->report.findings[0].starts_with(
      "GPU 0 is busy 8.5% of the 2.460 us window (30.0% in the 6 steady steps)"))
      << with->report.findings[0];
  EXPECT_FALSE(with->json.contains("warmup"));
  EXPECT_EQ(with->text.find("Warm-up:"), std::string::npos);
}

// Nothing to set apart: steps whose first is not an outlier, or no steps at all, leave the
// window and the report as they were.
TEST(StepsTest, NoWarmupLeavesTheWindowAlone) {
  testing::TraceBuilder even = LongFirstStep(false);
  testing::TraceBuilder none;
  for (int i = 0; i < 20; ++i)
    none.Kernel("same", 0, 1, 100 * i + 50, 100 * i + 90, 100 * i, 100 * i + 10);
  for (testing::TraceBuilder* b : {&even, &none}) {
    auto steady = AnalyzeAsTheCli(*b), with = AnalyzeAsTheCli(*b, false);
    EXPECT_FALSE(steady->report.warmup_apart());
    EXPECT_EQ(steady->json, with->json);
    EXPECT_EQ(steady->text, with->text);
  }
  EXPECT_EQ(AnalyzeAsTheCli(even)->report.steps.steps.size(), 7u);
}

TEST(StepsTest, StepRangesAreChecked) {
  auto one = ParseStepRange("2", 5), range = ParseStepRange("2:5", 5);
  ASSERT_TRUE(one.ok() && range.ok());
  EXPECT_EQ(*one, std::make_pair(size_t{1}, size_t{1}));
  EXPECT_EQ(*range, std::make_pair(size_t{1}, size_t{4}));
  for (const char* bad : {"0", "6", "3:2", "a", "1:", ":3", "-1", "99999999999"})
    EXPECT_FALSE(ParseStepRange(bad, 5).ok()) << bad;
}

// A launch loop of one kernel has no iterations; neither does a trace
// without kernels.
TEST(StepsTest, NoStepsWithoutARepeatingSequence) {
  testing::TraceBuilder b;
  for (int i = 0; i < 20; ++i) b.Kernel("same", 0, 1, 100 * i, 100 * i + 50);
  EXPECT_TRUE(StepsOf(b).steps.empty());
  // Three kernels per iteration, six iterations, host work between them:
  // steps of 3 that begin at "fwd", after the idle gaps.
  testing::TraceBuilder it = Iterations(6, false);
  StepReport r = StepsOf(it);
  EXPECT_EQ(r.period, 3u);
  ASSERT_EQ(r.steps.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.steps[i].begin_ns, i * 260) << i;  // each "fwd"
    EXPECT_EQ(r.steps[i].kernels, 3u);
  }
}

// The anchor kernel (the one after the most host work, "opt") missing from
// the first iteration ("opt_init" there, as an optimizer's first step takes
// another path): the kernels before its first run are two iterations, the
// first of them repeating the second but for that one kernel, so they are two
// steps, not one of twice the length (issue #41: 9 ProfilerSteps for 10).
TEST(StepsTest, AnIterationWithoutTheAnchorKernelIsAStepOfItsOwn) {
  testing::TraceBuilder b;
  uint64_t t = 0;
  for (int s = 0; s < 6; ++s) {
    for (int k = 0; k < 9; ++k, t += 20) b.Kernel("k" + std::to_string(k), 0, 1, t, t + 10);
    t += 500;
    b.Kernel(s == 0 ? "opt_init" : "opt", 0, 1, t, t + 10);
    t += 200;
  }
  StepReport r = StepsOf(b);
  EXPECT_EQ(r.period, 10u);
  ASSERT_EQ(r.steps.size(), 6u);
  EXPECT_EQ(r.steps[0].kernels, 9u);  // k0..k8 of the first iteration
  for (size_t i = 1; i < 6; ++i) EXPECT_EQ(r.steps[i].kernels, 10u) << i;
}

// Kernels on two streams that tie in start and end come in the order of their names' ids,
// whichever stream each ran on: the step's anchor (the kernel after the host work) is "x"
// (interned first), not whichever of the two the merge of the streams gives first.
TEST(StepsTest, KernelsTyingInTimeComeInNameOrder) {
  for (const bool swapped : {false, true}) {
    testing::TraceBuilder b;
    b.Str("x"), b.Str("y");
    uint64_t t = 0;
    for (int s = 0; s < 6; ++s) {
      b.Kernel(swapped ? "y" : "x", 0, 1, t, t + 10);
      b.Kernel(swapped ? "x" : "y", 0, 2, t, t + 10);
      for (int k = 0; k < 3; ++k)
        b.Kernel("k" + std::to_string(k), 0, 1, t + 20 + 20 * k, t + 30 + 20 * k);
      t += 500;
    }
    StepReport r = StepsOf(b);
    EXPECT_EQ(r.period, 5u) << swapped;
    EXPECT_EQ(r.anchor, "x") << swapped;
    ASSERT_EQ(r.steps.size(), 6u) << swapped;
    EXPECT_EQ(r.steps[1].begin_ns, 500u) << swapped;
  }
}

// Two GPUs running the same iterations, interleaved in time: the steps come
// from one GPU's sequence, not from the merged one.
TEST(StepsTest, TwoGpusInterleaved) {
  testing::TraceBuilder b = Iterations(5, true);
  StepReport r = StepsOf(b);
  EXPECT_EQ(r.period, 3u);
  ASSERT_EQ(r.steps.size(), 5u);
  EXPECT_EQ(r.steps[1].kernels, 6u);  // both GPUs' kernels of the iteration
}

// torch.profiler's step ranges, when present, are the steps.
TEST(StepsTest, ProfilerStepRangesComeFirst) {
  testing::TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.Kernel("k", 0, 1, 1000 * i + 100, 1000 * i + 400, 1000 * i + 10, 1000 * i + 20);
    b.Nvtx("ProfilerStep#" + std::to_string(i), 1000 * i, 1000 * i + 900);
    // Kineto writes each step again as a GPU annotation: one step, not two.
    b.Nvtx("ProfilerStep#" + std::to_string(i), 1000 * i + 5, 1000 * i + 890, 7);
  }
  StepReport r = StepsOf(b);
  EXPECT_EQ(r.method, "ProfilerStep ranges");
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_EQ(r.steps[2].begin_ns, 2000u);
  EXPECT_EQ(r.steps[2].end_ns, 2900u);
  EXPECT_EQ(r.steps[2].gpu_busy_ns, 300u);
  EXPECT_EQ(r.steps[2].kernels, 1u);
}

// A program's own "step N" ranges set the steps when there is no
// ProfilerStep range, before a kernel pattern that repeats several times
// inside one step (as a loop of 4 identical layers does: seen on the H100).
TEST(StepsTest, ProgramStepRangesBeforeTheKernelSequence) {
  testing::TraceBuilder b;
  for (int i = 0; i < 5; ++i) {
    for (int layer = 0; layer < 4; ++layer)
      b.Kernel("gemm", 0, 1, 1000 * i + 100 + 200 * layer, 1000 * i + 150 + 200 * layer);
    b.Nvtx("step " + std::to_string(i), 1000 * i, 1000 * i + 950);
    b.Nvtx("step " + std::to_string(i) + " extra", 1000 * i + 10, 1000 * i + 20);  // not a step
  }
  StepReport r = StepsOf(b);
  EXPECT_EQ(r.method, "NVTX step ranges");
  ASSERT_EQ(r.steps.size(), 5u);
  EXPECT_EQ(r.steps[3].begin_ns, 3000u);
  EXPECT_EQ(r.steps[3].kernels, 4u);
  for (const char* name : {"iteration 1", "Step#2", "iter_3", "step:4", "step5"})
    EXPECT_EQ(StepRangeKind(name), StepRange::kProgram) << name;
  for (const char* name : {"step", "steps 3", "step 3a", "forward 3", "step 3 extra"})
    EXPECT_EQ(StepRangeKind(name), StepRange::kNone) << name;
}

}  // namespace
}  // namespace tracesmith::analysis
