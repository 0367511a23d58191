// GPU instruction samples in `analyze` (analysis/pc_samples.h): the shares per
// function, stall reason, source line and instruction on a trace whose counts
// are known (testing/pc_sample_trace.h), the findings at their thresholds, the
// text section and the JSON key, and that a trace without samples reports as
// before.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/pc_sample_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::analysis {
namespace {

using tracesmith::testing::PcSampleTrace;
using tracesmith::testing::PcSampleTraceOptions;

AnalysisReport AnalyzePc(const model::Trace& t, CompactTrace* c) {
  c->IngestAll(t);
  c->Finalize();
  return BuildReport(*c, "pc.sbt");
}
AnalysisReport AnalyzePc(const PcSampleTraceOptions& o = {}) {
  CompactTrace c;
  return AnalyzePc(PcSampleTrace(o), &c);
}

std::string PcText(const AnalysisReport& r, AnalyzeOptions o = {}) {
  std::ostringstream out;
  WriteTextReport(r, o, out);
  return out.str();
}

const FunctionSamples* FindPc(const PcSampleReport& r, const std::string& prefix) {
  for (const FunctionSamples& f : r.functions)
    if (f.name.rfind(prefix, 0) == 0) return &f;
  return nullptr;
}

size_t CountPcFindings(const AnalysisReport& r, const std::string& part) {
  size_t n = 0;
  for (const std::string& f : r.findings) n += f.find(part) != std::string::npos;
  return n;
}

TEST(PcSamples, StallNames) {
  EXPECT_TRUE(model::IsCountedStall("smsp__pcsamp_warps_issue_stalled_long_scoreboard"));
  EXPECT_FALSE(
      model::IsCountedStall("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"));
  EXPECT_FALSE(model::IsCountedStall("smsp__pcsamp_sample_count"));
  EXPECT_TRUE(model::IsCountedStall("long_scoreboard"));  // another tool's short name
  EXPECT_EQ(StallDescription("smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
            "waiting for a global/local memory (L1TEX) result");
  EXPECT_EQ(StallDescription("lg_throttle"), "global/local memory instruction queue full");
  EXPECT_EQ(StallDescription("smsp__pcsamp_warps_issue_stalled_wait"), "fixed-latency dependency");
  EXPECT_EQ(StallDescription("smsp__pcsamp_warps_issue_stalled_selected"), "issuing (not stalled)");
  EXPECT_EQ(StallDescription("smsp__pcsamp_warps_issue_stalled_barrier_not_issued"),
            "waiting at a block barrier (__syncthreads), nothing issued");
  // Unknown: the short name.
  EXPECT_EQ(StallDescription("smsp__pcsamp_warps_issue_stalled_warp_drift"), "warp_drift");
  EXPECT_EQ(SampleCount(4000), "4000");
  EXPECT_EQ(SampleCount(104'000), "104.0 k");
  EXPECT_EQ(SampleCount(42'200'000), "42.2 M");
}

TEST(PcSamples, SharesPerFunctionStallLineAndInstruction) {
  const AnalysisReport r = AnalyzePc();
  const PcSampleReport& s = r.gpu_samples;
  EXPECT_EQ(s.samples, 4000u);  // the _not_issued subset is not counted again
  EXPECT_FALSE(s.window_narrower);
  ASSERT_EQ(s.functions.size(), 3u);
  // By GPU time, then samples (probe_hot and probe_fma both have 300 ns).
  EXPECT_EQ(s.functions[0].name, "probe_mem(float const*, float*, int)");
  EXPECT_EQ(s.functions[1].name, "probe_hot(float*, int)");
  EXPECT_EQ(s.functions[2].name, "probe_fma(float*, int)");

  const FunctionSamples& mem = s.functions[0];
  EXPECT_EQ(mem.function, "_Z9probe_memPKfPfi");
  EXPECT_EQ(mem.pid, 100u);
  EXPECT_EQ(mem.samples, 1000u);
  EXPECT_DOUBLE_EQ(mem.share, 25.0);
  EXPECT_EQ(mem.kernels, 2u);
  EXPECT_EQ(mem.kernel_ns, 400u);
  EXPECT_DOUBLE_EQ(mem.gpu_share, 40.0);
  ASSERT_EQ(mem.stalls.size(), 3u);
  EXPECT_EQ(mem.stalls[0].reason, "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  EXPECT_EQ(mem.stalls[0].samples, 760u);
  EXPECT_EQ(mem.stalls[0].not_issued, 300u);
  EXPECT_DOUBLE_EQ(mem.stalls[0].share, 76.0);
  EXPECT_EQ(mem.stalls[1].reason, "smsp__pcsamp_warps_issue_stalled_lg_throttle");
  EXPECT_DOUBLE_EQ(mem.stalls[1].share, 22.0);
  EXPECT_EQ(mem.stalls[1].not_issued, 0u);
  EXPECT_DOUBLE_EQ(mem.stalls[2].share, 2.0);
  ASSERT_EQ(mem.lines.size(), 3u);
  EXPECT_EQ(mem.lines[0].file, "/src/probe/kernels.cu");
  EXPECT_EQ(mem.lines[0].line, 42u);
  EXPECT_EQ(mem.lines[0].samples, 810u);
  EXPECT_DOUBLE_EQ(mem.lines[0].share, 81.0);
  EXPECT_EQ(mem.lines[1].line, 40u);
  EXPECT_DOUBLE_EQ(mem.lines[1].share, 17.0);
  EXPECT_EQ(mem.lines[2].file, "");  // the instruction without a PcLine row
  EXPECT_DOUBLE_EQ(mem.lines[2].share, 2.0);
  ASSERT_EQ(mem.instructions.size(), 3u);
  EXPECT_EQ(mem.instructions[0].pc_offset, 0x100u);
  EXPECT_DOUBLE_EQ(mem.instructions[0].share, 81.0);
  EXPECT_EQ(mem.instructions[0].line, 42u);
  EXPECT_EQ(mem.instructions[0].top_stall, "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  EXPECT_NEAR(mem.instructions[0].top_stall_share, 100.0 * 600 / 810, 1e-9);
  EXPECT_EQ(mem.instructions[2].pc_offset, 0x200u);
  EXPECT_EQ(mem.instructions[2].file, "");

  const FunctionSamples& hot = s.functions[1];
  EXPECT_DOUBLE_EQ(hot.share, 50.0);
  EXPECT_DOUBLE_EQ(hot.gpu_share, 30.0);
  EXPECT_EQ(hot.stalls[0].reason, "smsp__pcsamp_warps_issue_stalled_wait");
  EXPECT_DOUBLE_EQ(hot.stalls[0].share, 45.0);
  EXPECT_EQ(hot.lines[0].line, 66u);
  EXPECT_DOUBLE_EQ(hot.lines[0].share, 99.7);

  const FunctionSamples& fma = s.functions[2];
  EXPECT_DOUBLE_EQ(fma.stalls[0].share, 55.0);
  ASSERT_EQ(fma.lines.size(), 1u);  // PcLine rows without a file: one "no line info" group
  EXPECT_EQ(fma.lines[0].file, "");
  EXPECT_DOUBLE_EQ(fma.lines[0].share, 100.0);
}

TEST(PcSamples, FindingsFireAtTheirThresholds) {
  const AnalysisReport r = AnalyzePc();
  // probe_mem: 40% of GPU time, 76% long_scoreboard, 81% on kernels.cu:42.
  EXPECT_EQ(CountPcFindings(r,
                            "Kernel probe_mem(float const*, float*, int) (40.0% of GPU time) is "
                            "mostly long_scoreboard: 76.0% of its GPU instruction samples, "
                            "waiting for a global/local memory (L1TEX) result."),
            1u);
  EXPECT_EQ(CountPcFindings(r,
                            "Kernel probe_mem(float const*, float*, int) (40.0% of GPU time) has "
                            "81.0% of its GPU instruction samples on one source line, "
                            "/src/probe/kernels.cu:42."),
            1u);
  // probe_fma: 55% wait; its samples are all "no line info": no line finding.
  EXPECT_EQ(CountPcFindings(r,
                            "Kernel probe_fma(float*, int) (30.0% of GPU time) is mostly wait: "
                            "55.0%"),
            1u);
  EXPECT_EQ(CountPcFindings(r, "probe_fma(float*, int) (30.0% of GPU time) has"), 0u);
  // probe_hot: 45% wait is under half; 99.7% on one line.
  EXPECT_EQ(CountPcFindings(r, "probe_hot(float*, int) (30.0% of GPU time) is mostly"), 0u);
  EXPECT_EQ(CountPcFindings(r, "probe_hot(float*, int) (30.0% of GPU time) has 99.7%"), 1u);

  // One stall reason with exactly half of the samples: said; one sample less: not.
  EXPECT_EQ(CountPcFindings(AnalyzePc({.hot_wait = 1000}),
                            "probe_hot(float*, int) (30.0% of GPU "
                            "time) is mostly wait: 50.0%"),
            1u);
  EXPECT_EQ(CountPcFindings(AnalyzePc({.hot_wait = 999}),
                            "probe_hot(float*, int) (30.0% of GPU "
                            "time) is mostly"),
            0u);
  // A kernel with exactly 10% of GPU time: said; under 10%: not.
  EXPECT_EQ(CountPcFindings(AnalyzePc({.mem_ns = 100, .fma_ns = 450, .hot_ns = 450}),
                            "Kernel probe_mem(float const*, float*, int) (10.0% of GPU time)"),
            2u);
  EXPECT_EQ(CountPcFindings(AnalyzePc({.mem_ns = 99, .fma_ns = 451, .hot_ns = 450}), "probe_mem"),
            0u);
}

TEST(PcSamples, TextSection) {
  const AnalysisReport r = AnalyzePc();
  const std::string text = PcText(r);
  const std::string expected =
      "\nInside the kernels (GPU instruction samples: 4000 in 3 functions)\n"
      "  probe_mem(float const*, float*, int)  40.0% of GPU time, 25.0% of 4000 samples: waiting "
      "for a global/local memory (L1TEX) result 76%, global/local memory instruction queue full "
      "22%; hottest line kernels.cu:42 (81%)\n"
      "    stall reasons: long_scoreboard 76.0%, lg_throttle 22.0%, selected 2.0%\n"
      "    source lines:  kernels.cu:42 81.0%, kernels.cu:40 17.0%, (no line info: compile with "
      "-lineinfo) 2.0%\n"
      "    instructions:  +0x100 81.0% (kernels.cu:42, long_scoreboard 74%), +0x180 17.0% "
      "(kernels.cu:40, long_scoreboard 94%), +0x200 2.0% (no line info, lg_throttle 50%)\n"
      "  probe_hot(float*, int)  30.0% of GPU time, 50.0% of 4000 samples: fixed-latency "
      "dependency 45%, issuing (not stalled) 35%; hottest line kernels.cu:66 (100%)\n";
  EXPECT_NE(text.find(expected), std::string::npos) << text;
  EXPECT_NE(text.find("  probe_fma(float*, int)  30.0% of GPU time, 25.0% of 4000 samples: "
                      "fixed-latency dependency 55%, issuing (not stalled) 20%; 100% without line "
                      "info (compile with -lineinfo)\n"),
            std::string::npos)
      << text;
  // Right after the kernel table.
  EXPECT_LT(text.find("Top kernels by total GPU time"), text.find("Inside the kernels"));
  // At most sampled_kernels functions, and what was left out.
  const std::string one = PcText(r, {.sampled_kernels = 1});
  EXPECT_NE(one.find("  ... 2 more sampled functions (use --top N)\n"), std::string::npos) << one;
  EXPECT_EQ(one.find("probe_hot(float*, int)  30.0%"), std::string::npos) << one;
}

TEST(PcSamples, JsonKey) {
  const AnalysisReport r = AnalyzePc();
  std::ostringstream out;
  WriteJsonReport(r, out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  ASSERT_TRUE(j.contains("gpu_samples"));
  const auto& s = j["gpu_samples"];
  EXPECT_EQ(s["samples"], 4000);
  EXPECT_EQ(s["rows"], r.gpu_samples.rows);
  EXPECT_EQ(s["window_narrower"], false);
  ASSERT_EQ(s["functions"].size(), 3u);
  const auto& mem = s["functions"][0];
  EXPECT_EQ(mem["name"], "probe_mem(float const*, float*, int)");
  EXPECT_EQ(mem["function"], "_Z9probe_memPKfPfi");
  EXPECT_EQ(mem["pid"], 100);
  EXPECT_EQ(mem["samples"], 1000);
  EXPECT_DOUBLE_EQ(mem["share_pct"].get<double>(), 25.0);
  EXPECT_EQ(mem["kernels"], 2);
  EXPECT_EQ(mem["kernel_ns"], 400);
  EXPECT_DOUBLE_EQ(mem["gpu_share_pct"].get<double>(), 40.0);
  const auto& stall = mem["stalls"][0];
  EXPECT_EQ(stall["reason"], "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  EXPECT_EQ(stall["short_name"], "long_scoreboard");
  EXPECT_EQ(stall["description"], "waiting for a global/local memory (L1TEX) result");
  EXPECT_EQ(stall["samples"], 760);
  EXPECT_EQ(stall["not_issued_samples"], 300);
  EXPECT_DOUBLE_EQ(stall["share_pct"].get<double>(), 76.0);
  const auto& line = mem["lines"][0];
  EXPECT_EQ(line["file"], "/src/probe/kernels.cu");
  EXPECT_EQ(line["line"], 42);
  EXPECT_EQ(line["samples"], 810);
  const auto& pc = mem["instructions"][0];
  EXPECT_EQ(pc["pc_offset"], 0x100);
  EXPECT_EQ(pc["line"], 42);
  EXPECT_EQ(pc["top_stall"], "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  EXPECT_TRUE(pc.contains("top_stall_share_pct"));
  // The keys that were there before keep their place; gpu_samples follows data_quality.
  EXPECT_LT(out.str().find("\"data_quality\""), out.str().find("\"gpu_samples\""));
}

TEST(PcSamples, NothingWithoutSamples) {
  const model::Trace with = PcSampleTrace(), without = PcSampleTrace({.samples = false});
  CompactTrace a, b;
  const AnalysisReport ra = AnalyzePc(with, &a), rb = AnalyzePc(without, &b);
  EXPECT_TRUE(rb.gpu_samples.empty());
  EXPECT_TRUE(rb.gpu_samples.functions.empty());
  const std::string text = PcText(rb);
  EXPECT_EQ(text.find("Inside the kernels"), std::string::npos) << text;
  EXPECT_EQ(CountPcFindings(rb, "GPU instruction samples"), 0u);
  std::ostringstream json;
  WriteJsonReport(rb, json);
  EXPECT_EQ(json.str().find("gpu_samples"), std::string::npos);
  // The rest of the report is the same as with samples (PcLine rows alone change nothing).
  std::ostringstream json_with;
  WriteJsonReport(ra, json_with);
  auto head = [](const std::string& s) { return s.substr(0, s.find("\"findings\"")); };
  EXPECT_EQ(head(json.str()), head(json_with.str()));
}

TEST(PcSamples, StreamedFileGivesTheSameReport) {
  const model::Trace t = PcSampleTrace();
  CompactTrace mem;
  const AnalysisReport a = AnalyzePc(t, &mem);
  tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(t, path.path(), {.rows_per_chunk = 3}).ok());
  CompactTrace streamed;
  ASSERT_TRUE(LoadCompactTrace(path.path(), {}, &streamed).ok());
  const AnalysisReport b = BuildReport(streamed, "pc.sbt");
  std::ostringstream ja, jb;
  WriteJsonReport(a, ja);
  WriteJsonReport(b, jb);
  EXPECT_EQ(ja.str(), jb.str());
  EXPECT_EQ(b.gpu_samples.samples, 4000u);
}

TEST(PcSamples, NarrowerWindowAndFunctionsWithoutKernels) {
  model::Trace t = PcSampleTrace();
  // Samples of a function no kernel row names (a device function that was not inlined).
  model::PcSampleEvent e{};
  e.samples = 1000;
  e.pid = 100;
  e.function_id = t.strings.Intern("_Z6helperv");
  e.stall_id = t.strings.Intern("smsp__pcsamp_warps_issue_stalled_wait");
  t.Rows<model::PcSampleEvent>().push_back(e);
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  // The window ends before probe_hot's launches: GPU time is the window's, samples the trace's.
  const auto& k = t.Rows<model::KernelEvent>();
  c.RestrictWindow(k.front().start_ns, k[3].end_ns);
  const AnalysisReport r = BuildReport(c, "pc.sbt");
  const PcSampleReport& s = r.gpu_samples;
  EXPECT_TRUE(s.window_narrower);
  EXPECT_EQ(s.samples, 5000u);
  ASSERT_EQ(s.functions.size(), 4u);
  EXPECT_EQ(s.functions[0].name, "probe_mem(float const*, float*, int)");
  EXPECT_NEAR(s.functions[0].gpu_share, 100.0 * 400 / 700, 1e-9);
  const FunctionSamples* hot = FindPc(s, "probe_hot");
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot->kernel_ns, 0u);
  const FunctionSamples* helper = FindPc(s, "_Z6helperv");
  ASSERT_NE(helper, nullptr);
  EXPECT_EQ(helper->kernel_ns, 0u);
  EXPECT_DOUBLE_EQ(helper->share, 20.0);
  const std::string text = PcText(r);
  EXPECT_NE(text.find("(GPU instruction samples: 5000 in 4 functions; samples of the whole trace, "
                      "GPU time of the window)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  _Z6helperv  no kernel in the window, 20.0% of 5000 samples"),
            std::string::npos)
      << text;
}

TEST(PcSamples, SeveralProcesses) {
  // The same program in processes 100 and 200: each function is its process's, with the GPU
  // time of that process's kernels of that name.
  model::Trace t = PcSampleTrace();
  const size_t kernels = t.Rows<model::KernelEvent>().size();
  for (size_t i = 0; i < kernels; ++i) {
    model::KernelEvent k = t.Rows<model::KernelEvent>()[i];
    k.pid = 200;
    t.Rows<model::KernelEvent>().push_back(k);
  }
  const size_t rows = t.Rows<model::PcSampleEvent>().size();
  for (size_t i = 0; i < rows; ++i) {
    model::PcSampleEvent e = t.Rows<model::PcSampleEvent>()[i];
    e.pid = 200;
    e.samples *= 3;
    t.Rows<model::PcSampleEvent>().push_back(e);
  }
  CompactTrace c;
  const AnalysisReport r = AnalyzePc(t, &c);
  const PcSampleReport& s = r.gpu_samples;
  EXPECT_EQ(s.samples, 16000u);
  ASSERT_EQ(s.functions.size(), 6u);
  EXPECT_EQ(s.functions[0].pid, 200u);  // as much GPU time, more samples
  EXPECT_EQ(s.functions[1].pid, 100u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(s.functions[i].name, "probe_mem(float const*, float*, int)");
    EXPECT_EQ(s.functions[i].kernel_ns, 400u);
    EXPECT_DOUBLE_EQ(s.functions[i].gpu_share, 20.0);
  }
  EXPECT_DOUBLE_EQ(s.functions[0].share, 18.75);
  // Process 200's instructions have no PcLine rows: their line is unknown.
  EXPECT_EQ(s.functions[0].lines[0].file, "");
  EXPECT_EQ(s.functions[1].lines[0].line, 42u);
  const std::string text = PcText(r);
  EXPECT_NE(text.find("\n  pid 200 probe_mem(float const*, float*, int)  20.0% of GPU time"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace tracesmith::analysis
