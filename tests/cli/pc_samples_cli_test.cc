// GPU instruction samples through the commands: `analyze` prints "Inside the
// kernels", `analyze --json` has `gpu_samples`, `--top` sets how many kernels,
// and `info` says how many samples the trace holds (testing/pc_sample_trace.h);
// `kernel` shows one kernel or one launch (testing/launch_sample_trace.h), and
// `diff` compares two runs' samples; exact counts (testing/sass_count_trace.h)
// in `kernel` and `analyze`.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"
#include "testing/launch_sample_trace.h"
#include "testing/pc_sample_trace.h"
#include "testing/sass_count_trace.h"
#include "testing/temp_dir.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith {
namespace {

std::string WritePcTrace(const testing::TempDir& dir, const model::Trace& t) {
  const std::string path = dir / "pc.sbt";
  EXPECT_TRUE(format::WriteTraceFile(t, path).ok());
  return path;
}

TEST(PcSamplesCli, AnalyzePrintsTheSection) {
  testing::TempDir dir;
  const std::string path = WritePcTrace(dir, testing::PcSampleTrace());
  Result r = RunTracesmith("analyze -q " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\nInside the kernels (GPU instruction samples: 4000 in 3 functions)\n"
                       "  probe_mem(float const*, float*, int)  40.0% of GPU time, 25.0% of 4000 "
                       "samples: waiting for a global/local memory (L1TEX) result 76%, "
                       "global/local memory instruction queue full 22%; hottest line "
                       "kernels.cu:42 (81%)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("is mostly long_scoreboard: 76.0% of its GPU instruction samples"),
            std::string::npos)
      << r.out;
  // --top 1: one kernel looked inside.
  r = RunTracesmith("analyze -q --top 1 " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("  ... 2 more sampled functions (use --top N)"), std::string::npos) << r.out;

  r = RunTracesmith("analyze -q --json " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpu_samples"]["samples"], 4000);
  EXPECT_EQ(j["gpu_samples"]["functions"][0]["stalls"][0]["short_name"], "long_scoreboard");
}

TEST(PcSamplesCli, WithoutSamplesNoSection) {
  testing::TempDir dir;
  const std::string path = WritePcTrace(dir, testing::PcSampleTrace({.samples = false}));
  Result r = RunTracesmith("analyze -q " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("Inside the kernels"), std::string::npos) << r.out;
  r = RunTracesmith("info " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("GPU instruction samples"), std::string::npos) << r.out;
}

TEST(PcSamplesCli, InfoCountsSamples) {
  testing::TempDir dir;
  const model::Trace t = testing::PcSampleTrace();
  const std::string path = WritePcTrace(dir, t);
  const Result r = RunTracesmith("info " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  // 4000 counted samples (the _not_issued ones are a subset), in 3 functions.
  EXPECT_NE(r.out.find("GPU instruction samples: 4000 in 3 functions, " +
                       std::to_string(t.Rows<model::PcSampleEvent>().size()) + " rows\n"),
            std::string::npos)
      << r.out;
}

// `kernel`: the page of one sampled function, its lines with their source
// text (the file is readable here) and the instructions under each.
TEST(PcSamplesCli, KernelPage) {
  testing::TempDir dir;
  model::Trace t = testing::PcSampleTrace();
  const std::string source = dir / "kernels.cu";
  {
    std::ofstream f(source);
    for (int i = 1; i <= 70; ++i)
      f << (i == 66 ? "  for (int i = 0; i < n; ++i) x = x * 3 + 1;  // hot" : "//") << "\n";
  }
  const uint32_t file = t.strings.Intern(source);
  for (model::PcLine& l : t.Rows<model::PcLine>())
    if (l.file_id) l.file_id = file;
  const std::string path = WritePcTrace(dir, t);
  Result r = RunTracesmith("kernel -q " + path + " probe_hot");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Kernel probe_hot(float*, int)\n  function _Z9probe_hotPfi\n  2000 samples; "
                       "2 launches"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("     1994  99.7%  " + source +
                       ":66   for (int i = 0; i < n; ++i) x = x * 3 + 1;  // hot\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("     1994  99.7%      +0x0300  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wait 45%, selected 35%, short_scoreboard 20%"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find(":60"), r.out.find(":66")) << r.out;  // lines in file order

  // Several matches: the one with most GPU time, the others named.
  r = RunTracesmith("kernel -q " + path + " probe");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Kernel probe_mem(float const*, float*, int)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(the name also matches probe_fma(float*, int))"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(no line info: compile with -lineinfo)"), std::string::npos) << r.out;

  r = RunTracesmith("kernel -q --json " + path + " probe_hot");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"], 2000);
  ASSERT_EQ(j["lines"].size(), 2u);
  EXPECT_EQ(j["lines"][1]["line"], 66);
  EXPECT_EQ(j["lines"][1]["instructions"][0]["pc_offset"], 0x300);
  EXPECT_EQ(j["lines"][1]["instructions"][0]["samples"], 1994);

  r = RunTracesmith("kernel -q " + path + " gemm");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("no sampled or counted kernel's name contains 'gemm'; the sampled "
                       "kernels with most GPU time:\n  probe_mem"),
            std::string::npos)
      << r.out;
  const std::string plain = dir / "plain.sbt";
  ASSERT_TRUE(format::WriteTraceFile(testing::PcSampleTrace({.samples = false}), plain).ok());
  r = RunTracesmith("kernel -q " + plain + " probe");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("the trace has no GPU instruction samples nor instruction counts "
                       "(capture with `tracesmith profile --pc-sampling` or `--sass-counts`)"),
            std::string::npos)
      << r.out;
}

// `kernel --launch N`: the page of one launch, its samples those of the drain
// window it had to itself; the errors say what to do.
TEST(PcSamplesCli, KernelPageOfOneLaunch) {
  testing::TempDir dir;
  const std::string path = dir / "launch.sbt";
  ASSERT_TRUE(format::WriteTraceFile(testing::LaunchSampleTrace(), path).ok());
  Result r = RunTracesmith("kernel -q " + path + " --launch 11");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Kernel hotK()\n  function _Z4hotKv\n  360 samples; 4 launches"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  its samples: 120 from 1 drain window (no other launch of the kernel ran "
                       "in it: all its samples are this one's)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("      100  83.3%  /src/k.cu:5\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("k.cu:7"), std::string::npos) << r.out;  // another launch's line

  r = RunTracesmith("kernel -q --json " + path + " hotK --launch 12");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["launch"]["correlation_id"], 12);
  EXPECT_EQ(j["launch"]["samples"], 120);
  EXPECT_EQ(j["launch"]["shared_windows"], 1);
  EXPECT_EQ(j["samples"], 360);  // the function's

  r = RunTracesmith("kernel -q " + path + " --launch 99");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("no kernel launch has correlation id 99"), std::string::npos) << r.out;
  r = RunTracesmith("kernel -q " + path + " --pid 100");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--pid goes with --launch N"), std::string::npos) << r.out;
  r = RunTracesmith("kernel -q " + path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("name a kernel (part of its name) or one launch (--launch N)"),
            std::string::npos)
      << r.out;
}

// `diff A B`: each kernel's lines and stall reasons, A -> B; nothing more
// when neither trace has samples.
TEST(PcSamplesCli, DiffComparesSamples) {
  testing::TempDir dir;
  const std::string a = dir / "a.sbt", b = dir / "b.sbt";
  ASSERT_TRUE(format::WriteTraceFile(testing::PcSampleTrace(), a).ok());
  ASSERT_TRUE(format::WriteTraceFile(testing::PcSampleTrace({.hot_wait = 300}), b).ok());
  Result r = RunTracesmith("diff " + a + " " + b);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\nGPU instruction samples (each kernel's lines and stall reasons, A -> "
                       "B)\n  A: 4000 samples, B: 4000 samples\n  probe_hot(float*, int): 2000 "
                       "samples (50.0% of A's) -> 2000 (50.0% of B's)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    stall  wait"), std::string::npos) << r.out;
  r = RunTracesmith("diff --json " + a + " " + b);
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& hot = j["gpu_samples"]["kernels"][0];
  EXPECT_EQ(hot["name"], "probe_hot(float*, int)");
  EXPECT_EQ(hot["stalls"][0]["samples_a"], 700);  // selected: 35% -> 65%
  EXPECT_EQ(hot["stalls"][0]["samples_b"], 1300);

  const std::string c = dir / "c.sbt", d = dir / "d.sbt";
  ASSERT_TRUE(format::WriteTraceFile(testing::PcSampleTrace({.samples = false}), c).ok());
  ASSERT_TRUE(format::WriteTraceFile(testing::PcSampleTrace({.samples = false}), d).ok());
  r = RunTracesmith("diff " + c + " " + d);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("GPU instruction samples"), std::string::npos) << r.out;
  r = RunTracesmith("diff --json " + c + " " + d);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("gpu_samples")) << r.out;
}

TEST(PcSamplesCli, KernelAndAnalyzeShowExactCounts) {
  testing::TempDir dir;
  const std::string path = WritePcTrace(dir, testing::SassCountTrace());
  Result r = RunTracesmith("kernel " + path + " count_loop");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Kernel count_loop(float*, int)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("25,856 warp instructions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/src/count/loop.cu:12"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  FFMA                            12,800  49.5%"), std::string::npos)
      << r.out;
  r = RunTracesmith("kernel --json " + path + " copy");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["counts"]["executed"], 200);
  EXPECT_EQ(j["sampled"], false);
  r = RunTracesmith("analyze -q " + path);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Instructions executed (exact counts, --sass-counts: 2 functions"),
            std::string::npos)
      << r.out;
  r = RunTracesmith("kernel " + path + " nothing_like_it");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("count_loop(float*, int)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tracesmith
