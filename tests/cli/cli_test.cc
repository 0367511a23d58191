// End-to-end tests of the `tracesmith` binary: output and exit status.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model::SyntheticOptions o;
    o.kernels = 500;
    trace_ = model::MakeSyntheticTrace(o);
    ASSERT_TRUE(format::WriteTraceFile(trace_, file_.path(), {.rows_per_chunk = 64}).ok());
  }
  model::Trace trace_;
  testing::TempPath file_;
};

TEST_F(CliTest, InfoCountsEveryKind) {
  Result r = RunTracesmith("info " + file_.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("complete (footer index present)"), std::string::npos) << r.out;
  auto row = [](const char* kind, size_t n) { return StrFormat("  %-10s %12zu\n", kind, n); };
  EXPECT_NE(r.out.find(row("kernel", 500)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(row("api", trace_.Rows<model::ApiEvent>().size())), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(row("memcpy", trace_.Rows<model::MemcpyEvent>().size())), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Synthetic H100 (sm_90, 132 SMs"), std::string::npos) << r.out;
}

TEST_F(CliTest, InfoReportsTruncationWithOffset) {
  auto bytes = ReadFileToString(file_.path());
  ASSERT_TRUE(bytes.ok());
  testing::TempPath cut;
  const size_t keep = bytes->size() * 2 / 3;
  ASSERT_TRUE(WriteStringToFile(cut.path(), bytes->substr(0, keep)).ok());
  Result r = RunTracesmith("info " + cut.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("unfinished"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("truncated"), std::string::npos) << r.out;
  EXPECT_EQ(RunTracesmith("info --strict " + cut.path()).status, 1);
}

TEST_F(CliTest, ViewFiltersByKindNameAndLimit) {
  Result r =
      RunTracesmith("view " + file_.path() + " --kind kernel --name layer_norm_fwd --limit 1000");
  ASSERT_EQ(r.status, 0) << r.out;
  size_t expected = 0;
  for (const auto& k : trace_.Rows<model::KernelEvent>())
    if (trace_.strings.Get(k.demangled_id).find("layer_norm_fwd") != std::string_view::npos)
      ++expected;
  ASSERT_GT(expected, 0u);
  size_t rows = 0;
  for (size_t pos = 0; (pos = r.out.find(" kernel ", pos)) != std::string::npos; ++pos) ++rows;
  EXPECT_EQ(rows, expected) << r.out;
  EXPECT_EQ(r.out.find(" api "), std::string::npos);

  Result limited = RunTracesmith("view " + file_.path() + " --limit 5");
  EXPECT_NE(limited.out.find("more events"), std::string::npos) << limited.out;
}

TEST_F(CliTest, ViewStatsTotalsMatchTheTrace) {
  Result r = RunTracesmith("view " + file_.path() + " --stats --kind memcpy");
  ASSERT_EQ(r.status, 0) << r.out;
  std::string n = std::to_string(trace_.Rows<model::MemcpyEvent>().size());
  EXPECT_NE(r.out.find(n + " events match"), std::string::npos) << r.out;
}

TEST_F(CliTest, ErrorsAreClearAndNonZero) {
  Result missing = RunTracesmith("info /nonexistent/trace.sbt");
  EXPECT_NE(missing.status, 0);
  // A missing name may be a run's (trace.rank*.sbt): the error says where it looked.
  EXPECT_NE(missing.out.find("tracesmith: error: no trace matches '/nonexistent/trace.sbt': looked "
                             "for trace.sbt, trace.rank*.sbt, trace.pid*.sbt in /nonexistent"),
            std::string::npos)
      << missing.out;
  testing::TempPath text(".json");
  ASSERT_TRUE(WriteStringToFile(text.path(), "{\"traceEvents\": [], \"padding\": 12345}").ok());
  Result not_sbt = RunTracesmith("info " + text.path());
  EXPECT_EQ(not_sbt.status, 1);
  EXPECT_NE(not_sbt.out.find("not an SBT trace"), std::string::npos) << not_sbt.out;
  Result bad_kind = RunTracesmith("view " + file_.path() + " --kind kernal");
  EXPECT_EQ(bad_kind.status, 1);
  EXPECT_NE(bad_kind.out.find("unknown event kind 'kernal'"), std::string::npos);
  Result bad_regex = RunTracesmith("view " + file_.path() + " --name '('");
  EXPECT_EQ(bad_regex.status, 1);
  EXPECT_NE(bad_regex.out.find("bad --name regex"), std::string::npos);
  Result bad_time = RunTracesmith("view " + file_.path() + " --from 3parsecs");
  EXPECT_EQ(bad_time.status, 1);
  EXPECT_NE(RunTracesmith("no-such-command").status, 0);
}

TEST_F(CliTest, ReplayOptionsAreCheckedBeforeTheGpu) {
  for (const char* bad : {"5:2", "x:3", "3", "1:2:3"}) {
    Result r = RunTracesmith("replay " + file_.path() + " --range " + bad);
    EXPECT_EQ(r.status, 1) << bad;
    EXPECT_NE(r.out.find("--range: '" + std::string(bad) + "' is not A:B"), std::string::npos)
        << r.out;
  }
  Result both = RunTracesmith("replay " + file_.path() + " --range 1:2 --launch 3");
  EXPECT_EQ(both.status, 1);
  EXPECT_NE(both.out.find("--range and --launch exclude each other"), std::string::npos)
      << both.out;
}

TEST_F(CliTest, HelpEverywhere) {
  Result top = RunTracesmith("--help");
  EXPECT_EQ(top.status, 0);
  for (const char* cmd : {"info", "view", "version", "benchmark", "memory"})
    EXPECT_NE(top.out.find(cmd), std::string::npos) << cmd;
  Result help_view = RunTracesmith("help view");
  EXPECT_EQ(help_view.status, 0);
  EXPECT_NE(help_view.out.find("--name"), std::string::npos);
  EXPECT_EQ(RunTracesmith("view --help").status, 0);
  // A command with subcommands, and one of those (`help benchmark` was "unknown command").
  Result bench = RunTracesmith("help benchmark");
  EXPECT_EQ(bench.status, 0) << bench.out;
  EXPECT_NE(bench.out.find("scale"), std::string::npos) << bench.out;
  Result scale = RunTracesmith("help benchmark scale");
  EXPECT_EQ(scale.status, 0) << scale.out;
  EXPECT_NE(scale.out.find("--kernels"), std::string::npos) << scale.out;
  Result unknown = RunTracesmith("help benchmark nosuch");
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.out.find("tracesmith: error: unknown command 'benchmark nosuch'"),
            std::string::npos)
      << unknown.out;
  Result v = RunTracesmith("version");
  EXPECT_EQ(v.status, 0);
  EXPECT_NE(v.out.find("SBT format 1.0"), std::string::npos);
  Result flag = RunTracesmith("--version");  // the same line, as users try first
  EXPECT_EQ(flag.status, 0);
  EXPECT_EQ(flag.out, v.out);
}

// `tracesmith memory` on a real capture: text, JSON with the same peak, --at,
// and a bad --at as a clear error.
TEST(CliMemory, RealCaptureTextJsonAndAt) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  const std::string path = std::string(src ? src : ".") + "/examples/traces/transformer_train.sbt";
  Result text = RunTracesmith("memory " + path);
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("device memory, GPU 0: NVIDIA H100 80GB HBM3"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("live at the peak:"), std::string::npos);
  // Captured before allocation calls carried stacks: said, with why.
  EXPECT_NE(text.out.find("This trace has no call stacks on its allocations: it was captured by a "
                          "TraceSmith from before allocation calls carried stacks"),
            std::string::npos)
      << text.out;
  Result json = RunTracesmith("memory --json --at 8s " + path);
  ASSERT_EQ(json.status, 0) << json.out;
  auto j = nlohmann::json::parse(json.out);
  ASSERT_FALSE(j["memory"].empty());
  const auto& dev = j["memory"][0];
  EXPECT_EQ(dev["space"], "device");
  EXPECT_EQ(dev["at_peak"]["live_bytes"], dev["peak_bytes"]);
  EXPECT_EQ(j["allocation_stacks"]["none"], true);
  EXPECT_EQ(j["allocation_stacks"]["with_stack"], 0);
  EXPECT_EQ(j["findings"][0], j["allocation_stacks"]["note"]);
  EXPECT_EQ(dev["at"]["ts_ns"], 8'000'000'000ull);
  EXPECT_LE(dev["at"]["live_bytes"].get<uint64_t>(), dev["peak_bytes"].get<uint64_t>());
  Result bad = RunTracesmith("memory --at soon " + path);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("--at soon"), std::string::npos) << bad.out;
  // Refused before the run is opened: the missing file is not what it says.
  Result first = RunTracesmith("memory --at soon " + path + ".missing");
  EXPECT_EQ(first.status, 1);
  EXPECT_NE(first.out.find("--at soon: 'soon' is not a duration"), std::string::npos) << first.out;
  // Its peak placed in the steps analyze finds (10, 2 of warm-up); --no-steps leaves them out.
  EXPECT_EQ(dev["steps"]["count"], 10);
  EXPECT_EQ(dev["peak_place"]["text"], "in step 2 (the warm-up)");
  Result no_steps = RunTracesmith("memory --json --no-steps " + path);
  ASSERT_EQ(no_steps.status, 0) << no_steps.out;
  auto n = nlohmann::json::parse(no_steps.out)["memory"][0];
  EXPECT_EQ(n["steps"]["method"], "");
  EXPECT_EQ(n["peak_place"]["text"], "");
  EXPECT_EQ(n["peak_bytes"], dev["peak_bytes"]);
  // Past the end: the trace's range.
  Result late = RunTracesmith("memory --at 99s " + path);
  EXPECT_EQ(late.status, 1);
  EXPECT_NE(late.out.find("--at 99s is past the end of the trace: it spans 0 to 10.134 s"),
            std::string::npos)
      << late.out;
}

TEST_F(CliTest, ExportDotRespectsTheNodeLimit) {
  testing::TempPath dot(".dot");
  Result r = RunTracesmith("export " + file_.path() + " -f dot --node-limit 40 -o " + dot.path());
  ASSERT_EQ(r.status, 0) << r.out;
  auto text = ReadFileToString(dot.path());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->rfind("digraph", 0), 0u) << text->substr(0, 200);
  size_t nodes = 0;  // node statements carry a label; edges use "->"
  for (size_t pos = 0; (pos = text->find("label=", pos)) != std::string::npos; ++pos) {
    size_t line = text->rfind('\n', pos);
    if (text->substr(line + 1, pos - line).find("->") == std::string::npos) ++nodes;
  }
  EXPECT_GT(nodes, 0u);
  EXPECT_LE(nodes, 40u + 20u) << "node limit not applied (cluster labels allowed)";
}

// XRay logs from compiler-rt (tests/import/data): names from --binary,
// warnings without it, and a cut log's damage (fatal only with --strict).
TEST(CliImport, XRayLogWithBinaryAndCutLog) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  const std::string data = std::string(src ? src : ".") + "/tests/import/data/";
  testing::TempPath out;
  Result r = RunTracesmith("import " + data + "xray_fdr.log --binary " + data +
                           "xray_prog.instrmap -o " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("(xray-fdr): 279 events imported, 5 skipped"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  Result view = RunTracesmith("view " + out.path() + " --stats");
  ASSERT_EQ(view.status, 0) << view.out;
  EXPECT_NE(view.out.find("demo::Worker::Step(int)"), std::string::npos) << view.out;

  r = RunTracesmith("import --force " + data + "xray_basic.log -o " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("function#<id>"), std::string::npos) << r.out;

  auto log = ReadFileToString(data + "xray_basic.log");
  ASSERT_TRUE(log.ok());
  testing::TempPath cut(".xray");
  ASSERT_TRUE(WriteStringToFile(cut.path(), log->substr(0, 32 + 32 * 50 + 5)).ok());
  r = RunTracesmith("import --force " + cut.path() + " -o " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("byte 1632: basic-mode record cut short"), std::string::npos) << r.out;
  r = RunTracesmith("import --strict --force " + cut.path() + " -o " + out.path());
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("byte 1632"), std::string::npos) << r.out;
}

// A real torch.profiler trace (tests/export/data: torch 2.11, H200, 5 MLP
// training steps) imports, and analyze sees every "kernel" event of it.
TEST(CliImport, TorchProfilerTraceImportsAndAnalyzes) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  const std::string path =
      std::string(src ? src : ".") + "/tests/export/data/torch_profiler_mlp.json.gz";
  gzFile f = gzopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr) << path;
  std::string text;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  const nlohmann::json torch = nlohmann::json::parse(text);
  size_t kernels = 0;
  for (const auto& e : torch["traceEvents"])
    if (e.value("ph", "") == "X" && e.value("cat", "") == "kernel") ++kernels;
  ASSERT_GT(kernels, 0u);

  testing::TempPath out(".sbt");
  Result r = RunTracesmith("import " + path + " -o " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("(kineto-json)"), std::string::npos) << r.out;
  r = RunTracesmith("analyze --json " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"kernel_count\":" + std::to_string(kernels)), std::string::npos) << r.out;
  r = RunTracesmith("analyze " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Top kernels by total GPU time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sgemm_largek_lds64"), std::string::npos) << r.out;
  // One clock for all its pids: nothing to align, no warning.
  EXPECT_EQ(r.out.find("no clock anchor"), std::string::npos) << r.out;
}

// torch.profiler's [memory] events imported (tests/import/data/torch_memory_small.json,
// numbers in tests/import/kineto_memory_test.cc): `memory` shows the caching allocator's
// live bytes, owners and call sites from the ops and Python frames open at each event.
TEST(CliImport, TorchProfilerMemoryEventsAreTheMemoryModels) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  const std::string path =
      std::string(src ? src : ".") + "/tests/import/data/torch_memory_small.json";
  testing::TempPath out(".sbt");
  Result r = RunTracesmith("import " + path + " -o " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  r = RunTracesmith("memory --json " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["allocation_stacks"]["with_stack"], 4);  // all 4: the allocator's frame at least
  ASSERT_EQ(j["memory"].size(), 2u);
  const auto& dev = j["memory"][0];  // pid 7, GPU 0, then its CPU ("other") memory
  EXPECT_EQ(dev["space"], "device");
  EXPECT_EQ(dev["allocs"], 3);
  EXPECT_EQ(dev["frees"], 2);
  EXPECT_EQ(dev["unmatched_frees"], 1);  // memory allocated before the trace
  // 4 MiB + the autograd thread's 2 MiB at 60 us (the trace starts at the first range, ts 0).
  EXPECT_EQ(dev["peak_bytes"], 6 << 20);
  EXPECT_EQ(dev["at_peak"]["ts_ns"], 60000);
  EXPECT_EQ(dev["end_bytes"], 2 << 20);
  // torch's own totals: 1 MiB was allocated before the trace (freed at 90 us).
  EXPECT_EQ(dev["torch_allocated_peak_bytes"], 7 << 20);
  EXPECT_EQ(dev["torch_reserved_peak_bytes"], 8 << 20);
  EXPECT_TRUE(std::find(j["findings"].begin(), j["findings"].end(),
                        "torch.profiler's own totals for the caching allocator on GPU 0 (python3 "
                        "pid 7): at most 7.00 MiB allocated and 8.00 MiB reserved (taken from "
                        "CUDA, the blocks it caches included); its allocated peak is 1.00 MiB "
                        "above the peak here: memory allocated before the trace began, whose "
                        "allocations are not in it.") != j["findings"].end())
      << j["findings"].dump(1);
  EXPECT_EQ(dev["peak_place"]["phase"], "backward");
  EXPECT_EQ(dev["peak_place"]["evidence"],
            "allocated under autograd::engine::evaluate_function: MmBackward0");
  EXPECT_EQ(dev["peak_place"]["text"], "in a backward pass");
  ASSERT_EQ(dev["owners"].size(), 1u);
  EXPECT_EQ(dev["owners"][0]["owner"], "PyTorch caching allocator");
  const auto& sites = dev["at_peak"]["by_site"];
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0]["site"], "step (train.py:36)");
  EXPECT_EQ(sites[0]["bytes"], 4 << 20);
  EXPECT_EQ(sites[1]["site"], "aten::mm");
  EXPECT_EQ(sites[1]["bytes"], 2 << 20);
  const auto& cpu = j["memory"][1];
  EXPECT_EQ(cpu["space"], "other");
  EXPECT_EQ(cpu["peak_bytes"], 12000);
  EXPECT_EQ(cpu["owners"][0]["owner"], "PyTorch");
}

TEST(CliBenchmark, FormatPrintsOneLineWithAllFields) {
  Result r = RunTracesmith("benchmark format --events 20000 --repeats 1");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* key : {"bytes_per_kernel_event=", "bytes_per_kernel_event_zstd=",
                          "write_events_per_s=", "read_events_per_s="})
    EXPECT_NE(r.out.find(key), std::string::npos) << key;
}

}  // namespace
}  // namespace tracesmith
