// The join of GPU instruction samples to the code that launched each kernel
// (analysis/pc_samples.h, "The launching code"): by drain window and overlap,
// with the CUPTI latency allowed for, by GPU time where no window says more,
// the parts summing to the function's samples; and end to end, `analyze`
// naming the Python lines behind a kernel whose launches from two lines
// differ in samples per GPU-nanosecond (where sharing by GPU time would be
// wrong).
#include <gtest/gtest.h>

#include <sstream>

#include "tracesmith/analysis/report.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::analysis {
namespace {

constexpr uint64_t kMs = 1'000'000;

PcSamples::Window W(uint64_t from, uint64_t to, uint64_t samples) {
  return PcSamples::Window{from, to, 1, 1, samples};
}

uint64_t Sum(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (uint64_t x : v) s += x;
  return s;
}

TEST(PcSampleSites, WindowsDecideOverGpuTime) {
  // Two sites, equal GPU time, in two phases; the first phase's window holds
  // 100x the samples of the second's (e.g. one block against a full grid).
  const std::vector<SampledLaunch> launches = {{10 * kMs, 11 * kMs, 0},
                                               {12 * kMs, 13 * kMs, 0},
                                               {50 * kMs, 51 * kMs, 1},
                                               {52 * kMs, 53 * kMs, 1}};
  uint64_t by_window = 0;
  auto out = JoinSamplesToSites({W(5 * kMs, 30 * kMs, 10000), W(40 * kMs, 70 * kMs, 100)}, launches,
                                2, 5050, &by_window);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], 5000u);
  EXPECT_EQ(out[1], 50u);
  EXPECT_EQ(by_window, 5050u);
}

TEST(PcSampleSites, OverlapSharesAWindow) {
  // One window over both sites' launches: shared by how long each ran in it
  // (the part outside the window does not count).
  const std::vector<SampledLaunch> launches = {{0, 30 * kMs, 0},          // 10 ms inside [20, 40]
                                               {25 * kMs, 55 * kMs, 1}};  // 15 ms inside
  uint64_t by_window = 0;
  // The window starts at 22 ms; the latency slack (2 ms) makes it [20, 40].
  auto out = JoinSamplesToSites({W(22 * kMs, 40 * kMs, 500)}, launches, 2, 250, &by_window);
  EXPECT_EQ(out[0], 100u);
  EXPECT_EQ(out[1], 150u);
  EXPECT_EQ(by_window, 250u);
}

TEST(PcSampleSites, LatencySlackReachesBack) {
  // The launch ended 1.5 ms before the window opened: its samples were still
  // in CUPTI's buffer. 3 ms before: outside, so by GPU time.
  const std::vector<SampledLaunch> launches = {{0, 8 * kMs + kMs / 2, 0}, {20 * kMs, 21 * kMs, 1}};
  uint64_t by_window = 0;
  auto out = JoinSamplesToSites({W(10 * kMs, 15 * kMs, 80)}, launches, 2, 80, &by_window);
  EXPECT_EQ(out[0], 80u);
  EXPECT_EQ(out[1], 0u);
  EXPECT_EQ(by_window, 80u);
  out = JoinSamplesToSites({W(11 * kMs + kMs / 2, 15 * kMs, 80)}, launches, 2, 80, &by_window);
  EXPECT_EQ(by_window, 0u);
  EXPECT_EQ(Sum(out), 80u);
}

TEST(PcSampleSites, WithoutWindowsByGpuTime) {
  const std::vector<SampledLaunch> launches = {{0, 300, 0}, {400, 500, 1}, {600, 700, 1}};
  uint64_t by_window = 7;
  auto out = JoinSamplesToSites({}, launches, 2, 1000, &by_window);
  EXPECT_EQ(by_window, 0u);
  EXPECT_EQ(out[0], 600u);
  EXPECT_EQ(out[1], 400u);
  // A window that no launch overlaps goes the same way; one that does, by time.
  out = JoinSamplesToSites({W(90 * kMs, 95 * kMs, 100), W(0, 1000, 100)}, launches, 2, 1000,
                           &by_window);
  EXPECT_EQ(by_window, 500u);
  EXPECT_EQ(out[0], 300u + 300u);  // 60% of the 500 joined by time, 60% of the rest
  EXPECT_EQ(out[1], 200u + 200u);
}

TEST(PcSampleSites, PartsAlwaysSumToTheSamples) {
  const std::vector<SampledLaunch> launches = {{1, 4, 0}, {2, 9, 1}, {3, 5, 2}, {3, 3, 1}};
  for (uint64_t samples : {1ull, 2ull, 7ull, 1000003ull}) {
    uint64_t by_window = 0;
    auto out = JoinSamplesToSites({W(0, 3, 5), W(3, 10, 3)}, launches, 4, samples, &by_window);
    EXPECT_EQ(Sum(out), samples);
    EXPECT_EQ(out[3], 0u);  // a site without launches gets nothing
    EXPECT_LE(by_window, samples);
  }
  uint64_t by_window = 0;
  EXPECT_EQ(Sum(JoinSamplesToSites({W(0, 3, 5)}, launches, 3, 0, &by_window)), 0u);
}

// End to end: kernel `work` launched from train.py:10 in the first 30 ms and
// from train.py:20 after 40 ms, the same GPU time each; the first phase's
// window holds 99% of the samples.
TEST(PcSampleSites, AnalyzeNamesTheLaunchingLines) {
  model::Trace t;
  auto str = [&](const std::string& s) { return t.strings.Intern(s); };
  model::StackBuilder b(&t);
  auto py_stack = [&](uint32_t line) {
    const uint32_t frames[] = {b.InternFrame({.function_id = str("step"),
                                              .file_id = str("/home/me/train.py"),
                                              .line = line,
                                              .kind = model::kFramePython})};
    return b.InternStack(frames);
  };
  const uint32_t site_a = py_stack(10), site_b = py_stack(20);
  uint32_t corr = 1;
  auto launch = [&](uint64_t at, uint32_t stack) {
    model::ApiEvent a{};
    a.start_ns = at - 5000;
    a.end_ns = at - 1000;
    a.correlation_id = corr;
    a.stack_id = stack;
    a.pid = 100;
    a.tid = 100;
    a.name_id = str("cudaLaunchKernel");
    t.Rows<model::ApiEvent>().push_back(a);
    model::KernelEvent k{};
    k.start_ns = at;
    k.end_ns = at + kMs;
    k.correlation_id = corr++;
    k.pid = 100;
    k.stream_id = 7;
    k.name_id = str("_Z4workPf");
    k.demangled_id = str("work(float*)");
    t.Rows<model::KernelEvent>().push_back(k);
  };
  for (uint64_t at : {10, 12, 14, 16}) launch(at * kMs, site_a);
  for (uint64_t at : {50, 52, 54, 56}) launch(at * kMs, site_b);
  auto window = [&](uint64_t from, uint64_t to, uint64_t n) {
    model::PcSampleEvent e{};
    e.start_ns = from;
    e.end_ns = to;
    e.samples = n;
    e.pc_offset = 0x80;
    e.pid = 100;
    e.cubin_crc = 1;
    e.function_id = str("_Z4workPf");
    e.stall_id = str("smsp__pcsamp_warps_issue_stalled_long_scoreboard");
    t.Rows<model::PcSampleEvent>().push_back(e);
  };
  window(5 * kMs, 30 * kMs, 9900);
  window(40 * kMs, 70 * kMs, 100);
  model::PcSass sass{};  // `symbolize` disassembled the module
  sass.pc_offset = 0x80;
  sass.text_id = str("LDG.E R4, desc[UR4][R2.64]");
  sass.pid = 100;
  sass.cubin_crc = 1;
  sass.function_id = str("_Z4workPf");
  t.Rows<model::PcSass>().push_back(sass);
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  const AnalysisReport r = BuildReport(c, "sites.sbt");
  ASSERT_EQ(r.gpu_samples.functions.size(), 1u);
  const FunctionSamples& f = r.gpu_samples.functions[0];
  ASSERT_EQ(f.sites.size(), 2u);
  EXPECT_EQ(f.sites[0].site, "step (/home/me/train.py:10)");
  EXPECT_EQ(f.sites[0].samples, 9900u);
  EXPECT_EQ(f.sites[0].launches, 4u);
  EXPECT_EQ(f.sites[0].kernel_ns, 4 * kMs);
  EXPECT_EQ(f.sites[1].site, "step (/home/me/train.py:20)");
  EXPECT_EQ(f.sites[1].samples, 100u);
  EXPECT_EQ(f.by_window, 10000u);
  std::ostringstream text;
  WriteTextReport(r, {}, text);
  EXPECT_NE(
      text.str().find(
          "launched from: step (/home/me/train.py:10) 99.0%, step (/home/me/train.py:20) 1.0% "
          "(100% joined by time, the rest by GPU time)"),
      std::string::npos)
      << text.str();
  // The finding names the instruction (no line table) and the launching line.
  size_t named = 0;
  for (const std::string& f : r.findings)
    named += f.find(
                 "is mostly long_scoreboard: 100.0% of its GPU instruction samples, waiting "
                 "for a global/local memory (L1TEX) result. Hottest instruction: +0x80 LDG.E "
                 "R4, desc[UR4][R2.64] (100.0% of its samples). Launched from step "
                 "(/home/me/train.py:10) (99.0% of its samples).") != std::string::npos;
  EXPECT_EQ(named, 1u) << text.str();
  EXPECT_NE(text.str().find("+0x0080 LDG.E R4, desc[UR4][R2.64]"), std::string::npos);
  std::ostringstream json;
  WriteJsonReport(r, json);
  EXPECT_NE(json.str().find("\"site\":\"step (/home/me/train.py:10)\""), std::string::npos);
  EXPECT_NE(json.str().find("\"sass\":\"LDG.E R4, desc[UR4][R2.64]\""), std::string::npos);
}

TEST(PcSampleSites, NoStacksNoSites) {
  model::Trace t;
  model::KernelEvent k{};
  k.start_ns = kMs;
  k.end_ns = 2 * kMs;
  k.pid = 1;
  k.name_id = t.strings.Intern("_Z1kv");
  t.Rows<model::KernelEvent>().push_back(k);
  model::PcSampleEvent e{};
  e.start_ns = 0;
  e.end_ns = 3 * kMs;
  e.samples = 10;
  e.pid = 1;
  e.function_id = k.name_id;
  e.stall_id = t.strings.Intern("smsp__pcsamp_warps_issue_stalled_wait");
  t.Rows<model::PcSampleEvent>().push_back(e);
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  const AnalysisReport r = BuildReport(c, "nostack.sbt");
  ASSERT_EQ(r.gpu_samples.functions.size(), 1u);
  EXPECT_TRUE(r.gpu_samples.functions[0].sites.empty());
  EXPECT_EQ(r.gpu_samples.functions[0].samples, 10u);
}

}  // namespace
}  // namespace tracesmith::analysis
