// Exact instruction counts (analysis/sass_counts.h, `profile --sass-counts`)
// on testing/sass_count_trace.h, whose counts are known: the opcode of a SASS
// text, the per-function totals and opcode histogram, the kernel page of a
// counted function (text and JSON), `analyze`'s section and JSON key.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/sass_count_trace.h"
#include "tracesmith/analysis/kernel_page.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

CompactTrace& CountedCompact() {
  static CompactTrace* c = [] {
    auto* t = new CompactTrace;
    t->IngestAll(::tracesmith::testing::SassCountTrace());
    t->Finalize();
    return t;
  }();
  return *c;
}

const OpcodeCount* FindOpcode(const FunctionCounts& f, const std::string& opcode) {
  for (const OpcodeCount& o : f.opcodes)
    if (o.opcode == opcode) return &o;
  return nullptr;
}

TEST(SassCounts, OpcodeIsTheFirstTokenWithoutPredicate) {
  EXPECT_EQ(OpcodeOf("FFMA R2, R2, R3, R4"), "FFMA");
  EXPECT_EQ(OpcodeOf("@!P0 BRA 0x70"), "BRA");
  EXPECT_EQ(OpcodeOf("  @P0   LDG.E.128 R4, desc[UR4][R2.64]"), "LDG.E.128");
  EXPECT_EQ(OpcodeOf("EXIT"), "EXIT");
  EXPECT_EQ(OpcodeOf("NOP;"), "NOP");
  EXPECT_EQ(OpcodeOf(""), "");
  EXPECT_EQ(OpcodeOf("@P0"), "");
  EXPECT_EQ(ExactCount(0), "0");
  EXPECT_EQ(ExactCount(999), "999");
  EXPECT_EQ(ExactCount(25856), "25,856");
  EXPECT_EQ(ExactCount(1234567), "1,234,567");
}

TEST(SassCounts, TotalsAndOpcodesPerFunction) {
  const std::vector<FunctionCounts> s = SummarizeSassCounts(CountedCompact());
  ASSERT_EQ(s.size(), 2u);
  const FunctionCounts& loop = s[0];  // most executed first
  EXPECT_EQ(loop.name, "count_loop(float*, int)");
  EXPECT_EQ(loop.function, "_Z10count_loopPfi");
  EXPECT_EQ(loop.pid, 100u);
  EXPECT_EQ(loop.executed, 25856u);
  EXPECT_EQ(loop.thread_executed, 827392u);
  EXPECT_EQ(loop.instructions, 9u);  // the two rows of +0x20 are one instruction
  EXPECT_EQ(loop.kernels, 2u);
  EXPECT_EQ(loop.kernel_ns, 1000u);
  ASSERT_EQ(loop.opcodes.size(), 6u);
  EXPECT_EQ(loop.opcodes[0].opcode, "FFMA");
  EXPECT_EQ(loop.opcodes[0].executed, 12800u);
  EXPECT_EQ(loop.opcodes[0].thread_executed, 409600u);
  EXPECT_EQ(loop.opcodes[0].instructions, 2u);
  EXPECT_NEAR(loop.opcodes[0].share, 100.0 * 12800 / 25856, 1e-9);
  EXPECT_EQ(loop.opcodes[1].opcode, "BRA");  // "@!P0 BRA", "@P0 BRA" and "BRA": one opcode
  EXPECT_EQ(loop.opcodes[1].executed, 6464u);
  EXPECT_EQ(loop.opcodes[1].instructions, 3u);
  const OpcodeCount* isetp = FindOpcode(loop, "ISETP.GE.AND");
  ASSERT_NE(isetp, nullptr);
  EXPECT_EQ(isetp->executed, 6400u);
  for (const char* op : {"MOV", "STG.E", "EXIT"}) {
    const OpcodeCount* o = FindOpcode(loop, op);
    ASSERT_NE(o, nullptr) << op;
    EXPECT_EQ(o->executed, 64u) << op;
    EXPECT_EQ(o->thread_executed, 2048u) << op;
  }
  const FunctionCounts& copy = s[1];
  EXPECT_EQ(copy.name, "copy(float const*, float*)");
  EXPECT_EQ(copy.executed, 200u);
  EXPECT_EQ(copy.kernels, 1u);
  ASSERT_EQ(copy.opcodes.size(), 2u);
  const OpcodeCount* none = FindOpcode(copy, "");  // +0x00 has no SASS text
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->executed, 100u);
  EXPECT_DOUBLE_EQ(none->share, 50.0);
}

TEST(SassCounts, NoRowsNoCounts) {
  CompactTrace c;
  model::Trace t = ::tracesmith::testing::SassCountTrace();
  t.Rows<model::SassCount>().clear();
  c.IngestAll(t);
  c.Finalize();
  EXPECT_TRUE(SummarizeSassCounts(c).empty());
  auto page = BuildKernelPage(c, "count_loop", CallSiteRules{});
  ASSERT_FALSE(page.ok());
  EXPECT_NE(page.status().message().find("--sass-counts"), std::string::npos);
}

TEST(SassCounts, KernelPageOfACountedFunction) {
  auto page = BuildKernelPage(CountedCompact(), "count_loop", CallSiteRules{});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_FALSE(page->sampled);
  ASSERT_TRUE(page->counts.has_value());
  EXPECT_EQ(page->counts->executed, 25856u);
  EXPECT_EQ(page->function.kernels, 2u);
  EXPECT_NEAR(page->function.gpu_share, 100.0 * 1000 / 1100, 1e-9);
  // Lines 10..14 of loop.cu, each with its instructions' counts.
  ASSERT_EQ(page->lines.size(), 5u);
  std::vector<std::pair<uint32_t, uint64_t>> lines;
  for (const KernelPageLine& l : page->lines) lines.push_back({l.line, l.executed});
  EXPECT_EQ(lines, (std::vector<std::pair<uint32_t, uint64_t>>{
                       {10, 64}, {11, 64 + 6400 + 6400}, {12, 12800}, {13, 64}, {14, 64}}));
  const KernelPageLine& body = page->lines[2];
  ASSERT_EQ(body.instructions.size(), 2u);
  EXPECT_TRUE(body.instructions[0].counted);
  EXPECT_EQ(body.instructions[0].pc_offset, 0x20u);
  EXPECT_EQ(body.instructions[0].executed, 6400u);
  EXPECT_EQ(body.instructions[0].thread_executed, 204800u);
  EXPECT_EQ(body.instructions[0].sass, "FFMA R2, R2, R3, R4");
  EXPECT_EQ(body.instructions[0].samples, 0u);
  // The never-executed instruction is listed with 0.
  ASSERT_EQ(page->lines[4].instructions.size(), 2u);
  EXPECT_TRUE(page->lines[4].instructions[1].counted);
  EXPECT_EQ(page->lines[4].instructions[1].executed, 0u);

  std::ostringstream text;
  WriteKernelPageText(*page, text);
  const std::string s = text.str();
  EXPECT_NE(s.find("no GPU instruction samples (--pc-sampling), exact counts only"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("25,856 warp instructions, 827,392 thread instructions (32.0 threads per "
                   "warp instruction); 9 instructions counted"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("SAMPLES"), std::string::npos) << s;  // nothing sampled: no column
  EXPECT_NE(s.find("EXECUTED"), std::string::npos) << s;
  EXPECT_NE(s.find("         6,400         204,800      +0x0020  FFMA R2, R2, R3, R4"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  FFMA                            12,800  49.5%         409,600  2"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  BRA                              6,464  25.0%         206,848  3"),
            std::string::npos)
      << s;

  std::ostringstream json;
  WriteKernelPageJson(*page, json);
  const nlohmann::json j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j["sampled"], false);
  EXPECT_EQ(j["counts"]["executed"], 25856);
  EXPECT_EQ(j["counts"]["thread_executed"], 827392);
  EXPECT_EQ(j["counts"]["instructions"], 9);
  EXPECT_EQ(j["counts"]["opcodes"][0]["opcode"], "FFMA");
  EXPECT_EQ(j["counts"]["opcodes"][0]["executed"], 12800);
  EXPECT_EQ(j["counts"]["opcodes"][0]["instructions"], 2);
  EXPECT_EQ(j["lines"][2]["executed"], 12800);
  EXPECT_EQ(j["lines"][2]["instructions"][1]["pc_offset"], 0x30);
  EXPECT_EQ(j["lines"][2]["instructions"][1]["executed"], 6400);
  EXPECT_EQ(j["lines"][2]["instructions"][1]["counted"], true);
}

TEST(SassCounts, KernelPageNamesTheCountedKernelsWhenNoneMatches) {
  auto page = BuildKernelPage(CountedCompact(), "nope", CallSiteRules{});
  ASSERT_FALSE(page.ok());
  const std::string m(page.status().message());
  EXPECT_NE(m.find("counted kernels (--sass-counts)"), std::string::npos) << m;
  EXPECT_NE(m.find("count_loop(float*, int)"), std::string::npos) << m;
}

TEST(SassCounts, AnalyzeSectionAndJson) {
  const AnalysisReport r = BuildReport(CountedCompact(), "counts.sbt");
  ASSERT_EQ(r.sass_counts.size(), 2u);
  std::ostringstream text;
  WriteTextReport(r, AnalyzeOptions{}, text);
  const std::string s = text.str();
  EXPECT_NE(s.find("Instructions executed (exact counts, --sass-counts: 2 functions"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("count_loop(float*, int)  25,856 warp instructions (32.0 threads each) in 2 "
                   "launches"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("opcodes: FFMA 49.5%, BRA 25.0%, ISETP.GE.AND 24.8%, EXIT 0.2%, MOV 0.2%, 1 "
                   "more"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("opcodes: (no SASS text) 50.0%, LDG.E 50.0%"), std::string::npos) << s;
  std::ostringstream json;
  WriteJsonReport(r, json);
  const nlohmann::json j = nlohmann::json::parse(json.str());
  ASSERT_EQ(j["sass_counts"].size(), 2u);
  EXPECT_EQ(j["sass_counts"][0]["name"], "count_loop(float*, int)");
  EXPECT_EQ(j["sass_counts"][0]["kernels"], 2);
  EXPECT_EQ(j["sass_counts"][0]["counts"]["executed"], 25856);
  EXPECT_EQ(j["sass_counts"][1]["counts"]["opcodes"].size(), 2u);
}

}  // namespace
}  // namespace tracesmith::analysis
