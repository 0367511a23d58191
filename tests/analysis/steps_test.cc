// Steps (issue #14 item 3): found in the real transformer capture from its
// repeating kernel sequence; --steps selects them.
#include "tracesmith/analysis/steps.h"

#include <gtest/gtest.h>

#include <filesystem>

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

std::string Example(const char* name) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  return std::string(src ? src : ".") + "/examples/traces/" + name;
}

// 5 warm-up + 5 timed iterations of a bf16 TransformerEncoder step: 309
// kernels each once warm; the first iteration also initialises AdamW state.
TEST(StepsTest, RealTransformerTraceHasTenIterations) {
  const std::string path = Example("transformer_train.sbt");
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
