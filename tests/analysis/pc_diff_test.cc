// The diff of two runs' GPU instruction samples (analysis/pc_diff.h) on the
// hand-built trace of testing/pc_sample_trace.h: B changes probe_hot's stall
// mix (wait 900 -> 300 samples of 2000), moves its hot instruction to another
// line, and drops probe_fma; each share is checked against the counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>

#include "testing/pc_sample_trace.h"
#include "tracesmith/analysis/diff.h"
#include "tracesmith/analysis/pc_diff.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

using tracesmith::testing::PcSampleTrace;

std::vector<FunctionSamples> SampledOf(const model::Trace& t) {
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  return SampledFunctions(c.pc_samples(), c.meta(), SIZE_MAX);
}

// B: probe_hot waits less (300 of its 2000 samples instead of 900), its hot
// instruction (+0x300) is now on line 67, and probe_fma was not sampled.
model::Trace AfterTrace() {
  model::Trace t = PcSampleTrace({.hot_wait = 300});
  const uint32_t hot = t.strings.Intern("_Z9probe_hotPfi");
  const uint32_t fma = t.strings.Intern("_Z9probe_fmaPfi");
  for (model::PcLine& l : t.Rows<model::PcLine>())
    if (l.function_id == hot && l.pc_offset == 0x300) l.line = 67;
  std::erase_if(t.Rows<model::PcSampleEvent>(),
                [&](const model::PcSampleEvent& e) { return e.function_id == fma; });
  return t;
}

const SampleShareChange* Find(const std::vector<SampleShareChange>& v, uint32_t line,
                              const std::string& reason = "") {
  for (const SampleShareChange& c : v)
    if (c.line == line && (reason.empty() || c.reason.ends_with(reason))) return &c;
  return nullptr;
}

TEST(PcSampleDiff, SharesPerKernelLineAndStall) {
  const PcSampleDiff d = DiffPcSamples(SampledOf(PcSampleTrace()), SampledOf(AfterTrace()));
  EXPECT_EQ(d.samples_a, 4000u);
  EXPECT_EQ(d.samples_b, 3000u);
  // probe_hot (2000 + 2000, 50% + 66.7%) before probe_mem (1000 + 1000, 25% + 33.3%).
  ASSERT_EQ(d.kernels.size(), 2u);
  const KernelSampleDiff& hot = d.kernels[0];
  EXPECT_EQ(hot.name, "probe_hot(float*, int)");
  EXPECT_EQ(hot.samples_a, 2000u);
  EXPECT_EQ(hot.samples_b, 2000u);
  EXPECT_DOUBLE_EQ(hot.share_a, 50.0);
  EXPECT_NEAR(hot.share_b, 66.67, 0.01);
  // Lines: :66 held 1994 of 2000 in A and none in B; :67 the reverse; :60 6 on both.
  ASSERT_EQ(hot.lines.size(), 3u);
  const SampleShareChange* l66 = Find(hot.lines, 66);
  const SampleShareChange* l67 = Find(hot.lines, 67);
  ASSERT_TRUE(l66 && l67);
  EXPECT_EQ(l66->samples_a, 1994u);
  EXPECT_EQ(l66->samples_b, 0u);
  EXPECT_DOUBLE_EQ(l66->share_a, 99.7);
  EXPECT_DOUBLE_EQ(l66->delta(), -99.7);
  EXPECT_DOUBLE_EQ(l67->share_b, 99.7);
  EXPECT_EQ(l67->file, "/src/probe/kernels.cu");
  EXPECT_EQ(hot.lines[2].line, 60u);  // no change: last
  EXPECT_DOUBLE_EQ(hot.lines[2].delta(), 0.0);
  // Stalls: wait 45% -> 15%, selected 35% -> 65%, short_scoreboard 20% on both.
  ASSERT_EQ(hot.stalls.size(), 3u);
  EXPECT_TRUE(hot.stalls[0].reason.ends_with("_selected"));  // +30, as wait's -30, but hotter
  const SampleShareChange* wait = Find(hot.stalls, 0, "_wait");
  const SampleShareChange* selected = Find(hot.stalls, 0, "_selected");
  ASSERT_TRUE(wait && selected);
  EXPECT_DOUBLE_EQ(wait->share_a, 45.0);
  EXPECT_DOUBLE_EQ(wait->share_b, 15.0);
  EXPECT_DOUBLE_EQ(selected->share_a, 35.0);
  EXPECT_DOUBLE_EQ(selected->share_b, 65.0);
  EXPECT_TRUE(hot.stalls[2].reason.ends_with("short_scoreboard"));
  // probe_mem did not change; probe_fma only in A.
  EXPECT_EQ(d.kernels[1].name, "probe_mem(float const*, float*, int)");
  for (const SampleShareChange& c : d.kernels[1].lines) EXPECT_DOUBLE_EQ(c.delta(), 0.0);
  ASSERT_EQ(d.kernels[1].lines.size(), 3u);  // no change: hottest first
  EXPECT_EQ(d.kernels[1].lines[0].line, 42u);
  EXPECT_EQ(d.kernels[1].lines[1].line, 40u);
  ASSERT_EQ(d.only_a.size(), 1u);
  EXPECT_EQ(d.only_a[0].name, "probe_fma(float*, int)");
  EXPECT_DOUBLE_EQ(d.only_a[0].share_a, 25.0);
  EXPECT_TRUE(d.only_b.empty());
  // Swapped, probe_fma is B's alone.
  const PcSampleDiff back = DiffPcSamples(SampledOf(AfterTrace()), SampledOf(PcSampleTrace()));
  ASSERT_EQ(back.only_b.size(), 1u);
  EXPECT_TRUE(back.only_a.empty());
}

// Only the `top` hottest lines of each side are compared, with the share each
// has on the other side even where it is not among that side's hottest.
TEST(PcSampleDiff, TopLinesOfEitherSide) {
  const PcSampleDiff d = DiffPcSamples(SampledOf(PcSampleTrace()), SampledOf(AfterTrace()), 1);
  const KernelSampleDiff& hot = d.kernels[0];
  ASSERT_EQ(hot.lines.size(), 2u);           // :66 (A's hottest) and :67 (B's)
  ASSERT_EQ(hot.stalls.size(), 2u);          // wait (A's) and selected (B's)
  EXPECT_EQ(d.kernels[1].lines.size(), 1u);  // probe_mem: :42 on both sides
  EXPECT_DOUBLE_EQ(d.kernels[1].lines[0].share_b, 81.0);
}

TEST(PcSampleDiff, TextAndJsonOfTheTraceDiff) {
  TraceDiff d;
  d.samples = DiffPcSamples(SampledOf(PcSampleTrace()), SampledOf(AfterTrace()));
  std::ostringstream text;
  WriteTextDiff(d, 20, text);
  EXPECT_NE(text.str().find("\nGPU instruction samples (each kernel's lines and stall reasons, "
                            "A -> B)\n  A: 4000 samples, B: 3000 samples\n"
                            "  probe_hot(float*, int): 2000 samples (50.0% of A's) -> 2000 "
                            "(66.7% of B's)\n"
                            "    line   kernels.cu:66                                 99.7% ->"
                            "   0.0%   -99.7\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("    stall  wait                                          45.0% ->"
                            "  15.0%   -30.0\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("  only in A: probe_fma(float*, int): 1000 samples (25.0%)\n"),
            std::string::npos)
      << text.str();
  std::ostringstream json;
  WriteJsonDiff(d, json);
  EXPECT_NE(json.str().find("\"gpu_samples\":{\"samples_a\":4000,\"samples_b\":3000,"),
            std::string::npos)
      << json.str();

  // Without samples on either side: no section, no key.
  TraceDiff plain;
  std::ostringstream t2, j2;
  WriteTextDiff(plain, 20, t2);
  WriteJsonDiff(plain, j2);
  EXPECT_EQ(t2.str().find("GPU instruction samples"), std::string::npos) << t2.str();
  EXPECT_EQ(j2.str().find("gpu_samples"), std::string::npos) << j2.str();
  // One side only: one line saying so, no kernel list.
  TraceDiff one;
  one.samples = DiffPcSamples({}, SampledOf(PcSampleTrace()));
  std::ostringstream t3;
  WriteTextDiff(one, 20, t3);
  EXPECT_NE(t3.str().find("  only B has samples (capture both with `tracesmith profile "
                          "--pc-sampling`)\n"),
            std::string::npos)
      << t3.str();
  EXPECT_EQ(t3.str().find("only in B"), std::string::npos) << t3.str();
}

}  // namespace
}  // namespace tracesmith::analysis
