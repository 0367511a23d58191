// Kernels that ran past `profile --kernel-timeout` in `analyze`
// (pc_samples.h: DescribeKernelTimeouts): a KernelTimeoutEvent row on the
// trace of testing/pc_sample_trace.h (probe_hot: 2000 samples, 99.7% on
// kernels.cu:66) names the kernel, its launching code and where its warps
// were, in the text, the JSON and first among the findings.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/pc_sample_trace.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::analysis {
namespace {

model::Trace TraceWithTimeout(bool ended) {
  model::Trace t = tracesmith::testing::PcSampleTrace();
  auto str = [&](const std::string& s) { return t.strings.Intern(s); };
  model::StackBuilder b(&t);
  const uint32_t frames[] = {b.InternFrame({.function_id = str("wait_for_peer"),
                                            .file_id = str("/home/me/train.py"),
                                            .line = 77,
                                            .kind = model::kFramePython})};
  model::KernelTimeoutEvent e{};
  e.start_ns = 1500;
  e.end_ns = 1500 + 30'000'000'000ull;
  e.launch_ns = 1400;
  e.timeout_ns = 30'000'000'000ull;
  e.samples = 2000;
  e.correlation_id = 42;
  e.stack_id = b.InternStack(frames);
  e.pid = 100;
  e.function_id = str("_Z9probe_hotPfi");
  e.demangled_id = str("probe_hot(float*, int)");
  e.ended = ended ? 1 : 0;
  t.Rows<model::KernelTimeoutEvent>().push_back(e);
  return t;
}

AnalysisReport AnalyzeTimeout(const model::Trace& t) {
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  return BuildReport(c, "hang.sbt");
}

TEST(KernelTimeouts, NamedWithTheLaunchingCodeAndTheLinesOfItsWarps) {
  const AnalysisReport r = AnalyzeTimeout(TraceWithTimeout(true));
  ASSERT_EQ(r.kernel_timeouts.size(), 1u);
  const KernelTimeoutReport& k = r.kernel_timeouts[0];
  EXPECT_EQ(k.name, "probe_hot(float*, int)");
  EXPECT_EQ(k.site, "wait_for_peer (/home/me/train.py:77)");
  EXPECT_EQ(k.running_ns, 30'000'000'000ull);
  EXPECT_EQ(k.since_launch_ns, 30'000'000'100ull);
  EXPECT_EQ(k.correlation_id, 42u);
  EXPECT_TRUE(k.ended);
  ASSERT_FALSE(k.lines.empty());
  EXPECT_EQ(k.lines[0].line, 66u);

  std::ostringstream text;
  WriteTextReport(r, {}, text);
  const std::string expected =
      "\nKernel timeouts (profile --kernel-timeout 30.000 s)\n"
      "  probe_hot(float*, int)  still running 30.000 s after it started (launched 30.000 s "
      "before); the program was ended\n"
      "    launched from: wait_for_peer (/home/me/train.py:77)\n"
      "    its warps:     kernels.cu:66 99.7%, kernels.cu:60 0.3%; stall reasons: wait 45%, "
      "selected 35%\n";
  EXPECT_NE(text.str().find(expected), std::string::npos) << text.str();
  EXPECT_LT(text.str().find("Kernel timeouts"), text.str().find("Top kernels by total GPU time"));

  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(
      r.findings[0].rfind("Kernel probe_hot(float*, int) was still running 30.000 s after it "
                          "started (--kernel-timeout 30.000 s), launched from wait_for_peer "
                          "(/home/me/train.py:77); its warps were at /src/probe/kernels.cu:66 "
                          "(99.7% of its samples, mostly wait)",
                          0),
      0u)
      << r.findings[0];
  EXPECT_NE(r.findings[0].find("The program was ended"), std::string::npos);

  std::ostringstream json;
  WriteJsonReport(r, json);
  const nlohmann::json j = nlohmann::json::parse(json.str());
  ASSERT_EQ(j["kernel_timeouts"].size(), 1u);
  const auto& o = j["kernel_timeouts"][0];
  EXPECT_EQ(o["name"], "probe_hot(float*, int)");
  EXPECT_EQ(o["site"], "wait_for_peer (/home/me/train.py:77)");
  EXPECT_EQ(o["running_ns"], 30'000'000'000ull);
  EXPECT_EQ(o["ended_program"], true);
  EXPECT_EQ(o["lines"][0]["line"], 66);
  EXPECT_EQ(o["stalls"][0]["short_name"], "wait");
}

TEST(KernelTimeouts, NoneWithoutTheRow) {
  const AnalysisReport r = AnalyzeTimeout(tracesmith::testing::PcSampleTrace());
  EXPECT_TRUE(r.kernel_timeouts.empty());
  std::ostringstream json;
  WriteJsonReport(r, json);
  EXPECT_EQ(json.str().find("kernel_timeouts"), std::string::npos);
  std::ostringstream text;
  WriteTextReport(r, {}, text);
  EXPECT_EQ(text.str().find("Kernel timeouts"), std::string::npos);
}

}  // namespace
}  // namespace tracesmith::analysis
