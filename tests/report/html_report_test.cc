// The HTML report (report/html_report.h) on the shipped real captures: the
// page is self-contained, its embedded analysis is what `analyze --json`
// gives for the same file (and its memory block what `memory --json` gives),
// its aggregates agree with that analysis; its size stays bounded on a
// synthetic 1 M-event trace; its script runs under node with a DOM stub.
#include "tracesmith/report/html_report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "testing/app_event_trace.h"
#include "testing/gpu_metric_trace.h"
#include "testing/temp_dir.h"
#include "testing/temp_file.h"
#include "tracesmith/analysis/capture_cost.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::report {
namespace {

using Json = nlohmann::json;

std::string SourceDir() {
  const char* src = std::getenv("TS_SOURCE_DIR");
  return src ? src : ".";
}
std::string Shipped(const std::string& name) {
  return SourceDir() + "/examples/traces/" + name + ".sbt";
}

// The text of <script type="application/json" id="ID">, parsed.
Json Block(const std::string& html, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const size_t at = html.find(open);
  EXPECT_NE(at, std::string::npos) << id;
  if (at == std::string::npos) return nullptr;
  const size_t begin = at + open.size(), end = html.find("</script>", begin);
  const std::string text = html.substr(begin, end - begin);
  return text.empty() ? Json() : Json::parse(text);
}

std::string Build(const std::string& path, HtmlReportSummary* summary = nullptr) {
  HtmlReportOptions o;
  o.load.active_region = true;  // as the CLI (and `analyze`) load it
  o.load.steady_state = true;
  auto html = BuildHtmlReport(path, path, o, summary);
  EXPECT_TRUE(html.ok()) << html.status().ToString();
  return html.ok() ? *html : std::string();
}

bool HaveNode() { return std::system("node --version > /dev/null 2>&1") == 0; }

// page_dom_check.js on the page written to `file`, with `flags`: its status.
int DomCheck(const std::string& file, const std::string& html, const std::string& flags) {
  if (!WriteStringToFile(file, html).ok()) return -1;
  const std::string cmd =
      "node " + SourceDir() + "/tests/report/page_dom_check.js " + file + flags + " > /dev/null";
  return std::system(cmd.c_str());
}

TEST(HtmlReportTest, PageIsSelfContained) {
  for (const char* name : {"transformer_train", "mlp_train", "launch_loop"}) {
    const std::string html = Build(Shipped(name));
    ASSERT_FALSE(html.empty()) << name;
    // No resource by URL: no src/href to another place than an anchor of the
    // page, no stylesheet link, no fetch, no module import.
    std::smatch m;
    const std::regex ref(R"re((src|href)\s*=\s*["']?\s*([^"'#\s>][^"'\s>]*))re", std::regex::icase);
    EXPECT_FALSE(std::regex_search(html, m, ref)) << name << ": " << m.str();
    for (const char* bad : {"http://", "https://", "<link", "@import", "url(", "fetch(",
                            "XMLHttpRequest", "import(", "WebSocket", "<iframe"})
      EXPECT_EQ(html.find(bad), std::string::npos) << name << " holds " << bad;
    EXPECT_LT(html.size(), 2u << 20) << name;
  }
}

TEST(HtmlReportTest, EmbeddedAnalysisIsAnalyzeJson) {
  for (const char* name : {"transformer_train", "mlp_train", "launch_loop"}) {
    const std::string path = Shipped(name);
    const std::string html = Build(path);
    // What `tracesmith analyze --json PATH` prints.
    analysis::LoadOptions load;
    load.active_region = true;
    load.steady_state = true;
    analysis::CompactTrace trace;
    ASSERT_TRUE(analysis::LoadCompactTrace(path, load, &trace).ok());
    std::ostringstream want;
    analysis::WriteJsonReport(analysis::BuildReport(trace, path), want);
    const Json analysis = Block(html, "ts-analysis");
    EXPECT_EQ(analysis, Json::parse(want.str())) << name;

    // What `tracesmith memory --json PATH` prints.
    analysis::MemoryReport memory;
    ASSERT_TRUE(analysis::BuildMemoryReport(path, {}, &memory).ok());
    std::ostringstream want_memory;
    analysis::WriteMemoryJson(memory, want_memory);
    EXPECT_EQ(Block(html, "ts-memory"), Json::parse(want_memory.str())) << name;

    // The page's own aggregates agree with the analysis: each stream's busy
    // time, and the flame graph's kernel leaves sum to the kernel time.
    const Json page = Block(html, "ts-page");
    ASSERT_EQ(page["timeline"]["lanes"].size(), analysis["streams"].size()) << name;
    for (size_t i = 0; i < analysis["streams"].size(); ++i) {
      const Json& lane = page["timeline"]["lanes"][i];
      EXPECT_EQ(analysis["streams"][i]["name"],
                StrFormat("GPU %u stream %u", lane["device"].get<uint32_t>(),
                          lane["stream"].get<uint32_t>()));
      EXPECT_EQ(lane["busy_ns"], analysis["streams"][i]["busy_ns"]) << name << " lane " << i;
    }
    const FoldedStacks folded = FoldStacks(trace, FlameWeight::kGpuTime);
    uint64_t kernel_ns = 0;
    for (const FoldedStack& s : folded.lines)
      if (!s.frames.ends_with("]")) kernel_ns += s.weight;  // not "[memcpy ..]" / "[memset]"
    EXPECT_EQ(kernel_ns, analysis["kernel_ns"].get<uint64_t>()) << name;
    EXPECT_EQ(page["flame"]["total"].get<uint64_t>(), folded.total) << name;
    EXPECT_EQ(page["flame"]["tree"][1].get<uint64_t>(), folded.total) << name;
  }
}

TEST(HtmlReportTest, HeaderNamesProgramGpusAndCaptureCost) {
  const std::string html = Build(Shipped("transformer_train"));
  const Json meta = Block(html, "ts-page")["meta"];
  ASSERT_EQ(meta["processes"].size(), 1u);
  EXPECT_EQ(meta["processes"][0]["cmdline"],
            "python3 bench/workloads/torch_transformer_train.py --steps 6");
  ASSERT_EQ(meta["devices"].size(), 1u);
  EXPECT_EQ(meta["devices"][0]["name"], "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(meta["capture_cost"].size(), 1u);
  EXPECT_NE(meta["capture_cost"][0]["line"].get<std::string>().find("per launch"),
            std::string::npos);
  bool dropped = false;
  for (const Json& s : meta["stats"]) dropped |= s["name"] == "capture.cupti_dropped_records";
  EXPECT_TRUE(dropped);
  EXPECT_EQ(meta["duration_ns"].get<uint64_t>(), 10133652294u);  // as `info` says: 10.134 s
}

// The capture cost per launch is the whole trace's, as `info` says it: the
// report's window (the steady state) holds fewer kernels than the capture
// launched (transformer_step: 2,477 of 3,192), and dividing by those made the
// cost look 29% higher.
TEST(HtmlReportTest, CaptureCostPerLaunchIsTheWholeTracesAsInfoSaysIt) {
  for (const char* name : {"transformer_step", "transformer_train"}) {
    const Json meta = Block(Build(Shipped(name)), "ts-page")["meta"];
    auto trace = format::ReadTraceFile(Shipped(name));
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    const std::vector<analysis::CaptureCost> costs = analysis::ComputeCaptureCost(*trace);
    ASSERT_EQ(costs.size(), 1u) << name;
    ASSERT_EQ(meta["capture_cost"].size(), 1u) << name;
    EXPECT_EQ(meta["capture_cost"][0]["line"], analysis::CaptureCostLine(costs[0])) << name;
    EXPECT_EQ(costs[0].kernels, trace->Rows<model::KernelEvent>().size()) << name;
  }
}

// The owners' series agree with `memory`'s report: one per process/device/
// space, the same owners, each owner's peak the one `memory` reports.
TEST(HtmlReportTest, OwnerSeriesAgreeWithTheMemoryReport) {
  const std::string html = Build(Shipped("transformer_train"));
  const Json memory = Block(html, "ts-memory");
  const Json series = Block(html, "ts-page")["memory_owners"];
  ASSERT_EQ(series.size(), memory["memory"].size());
  for (size_t i = 0; i < series.size(); ++i) {
    const Json& key = memory["memory"][i];
    EXPECT_EQ(series[i]["pid"], key["pid"]);
    EXPECT_EQ(series[i]["device_id"], key["device_id"]);
    EXPECT_EQ(series[i]["space"], key["space"]);
    ASSERT_EQ(series[i]["owners"].size(), key["owners"].size());
    for (size_t o = 0; o < key["owners"].size(); ++o) {
      EXPECT_EQ(series[i]["owners"][o]["owner"], key["owners"][o]["owner"]);
      EXPECT_EQ(series[i]["owners"][o]["peak_bytes"], key["owners"][o]["peak_bytes"]);
      EXPECT_EQ(series[i]["owners"][o]["bins"].size(), key["bins"].size());
    }
  }
}

TEST(HtmlReportTest, ScriptCannotBeClosedByTraceStrings) {
  EXPECT_EQ(EscapeJsonForScript(R"({"name":"</script><b>"})"),
            R"({"name":"\u003c/script>\u003cb>"})");
  EXPECT_EQ(Json::parse(EscapeJsonForScript(R"({"n":"a</script>"})"))["n"], "a</script>");
}

TEST(HtmlReportTest, WriterRefusesItsInputAndReportsMissingFiles) {
  const std::string path = Shipped("launch_loop");
  auto same = WriteHtmlReport(path, path, path, {});
  ASSERT_FALSE(same.ok());
  auto missing = BuildHtmlReport(SourceDir() + "/no/such.sbt", "x", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no/such.sbt"), std::string::npos);
  tracesmith::testing::TempDir dir;
  auto written = WriteHtmlReport(path, "launch_loop.sbt", dir / "r.html", {});
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(FileSize(dir / "r.html").value(), written->bytes);
}

// The program's own counters (testing/app_event_trace.h) under the timeline:
// in the page's timeline block over the same bins as the streams, and drawn
// by the script (page_dom_check.js finds each counter's row and its line).
TEST(HtmlReportTest, ProgramCountersUnderTheTimeline) {
  tracesmith::testing::TempDir dir;
  const std::string trace = dir / "app.sbt";
  ASSERT_TRUE(format::WriteTraceFile(tracesmith::testing::AppEventTrace(), trace).ok());
  const std::string html = Build(trace);
  const Json page = Block(html, "ts-page");
  const Json& tl = page["timeline"];
  ASSERT_EQ(tl["counters"].size(), 3u);
  std::vector<std::string> names;
  for (const Json& c : tl["counters"]) {
    names.push_back(c["name"]);
    EXPECT_EQ(c["lo"].size(), tl["bins"].get<size_t>());
    EXPECT_EQ(c["hi"].size(), tl["bins"].get<size_t>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"loss", "queue depth", "tokens/s"}));
  const Json& loss = tl["counters"][0];
  EXPECT_EQ(loss["min"], 1.0);
  EXPECT_EQ(loss["max"], 2.5);
  if (!HaveNode()) GTEST_SKIP() << "node is not installed: the counters were not drawn";
  EXPECT_EQ(DomCheck(dir / "app.html", html, " --counters"), 0);
}

// GPU metrics (testing/gpu_metric_trace.h) under the timeline: a row per
// (device, metric) named with its label and unit, over the same bins as the
// streams (the mean and the samples' range, not the samples), and drawn by the
// script (page_dom_check.js --gpu-metrics finds each row and its line).
TEST(HtmlReportTest, GpuMetricsUnderTheTimeline) {
  tracesmith::testing::TempDir dir;
  const std::string trace = dir / "metrics.sbt";
  ASSERT_TRUE(format::WriteTraceFile(tracesmith::testing::GpuMetricTrace(), trace).ok());
  const std::string html = Build(trace);
  EXPECT_NE(html.find("under the streams the GPU metrics (profile --gpu-metrics) and"),
            std::string::npos);
  const Json page = Block(html, "ts-page");
  const Json& tl = page["timeline"];
  ASSERT_EQ(tl["gpu_metrics"].size(), 3u);
  EXPECT_EQ(tl["gpu_metrics_omitted"], 0);
  std::vector<std::string> names;
  for (const Json& m : tl["gpu_metrics"]) {
    names.push_back(m["name"]);
    EXPECT_EQ(m["unit"], "%");
    EXPECT_EQ(m["device"], 0);
    for (const char* k : {"mean", "lo", "hi"})
      EXPECT_EQ(m[k].size(), tl["bins"].get<size_t>()) << k;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"GPU 0 \u00b7 SM active (%)",
                                             "GPU 0 \u00b7 Tensor pipe active (%)",
                                             "GPU 0 \u00b7 DRAM throughput (%)"}));
  const Json& dram = tl["gpu_metrics"][2];
  EXPECT_EQ(dram["min"], 0.0);
  EXPECT_EQ(dram["max"], 85.0);
  EXPECT_EQ(dram["mean"][0], 85.0);  // copy alone, from the window's start
  if (!HaveNode()) GTEST_SKIP() << "node is not installed: the metrics were not drawn";
  EXPECT_EQ(DomCheck(dir / "metrics.html", html, " --gpu-metrics"), 0);
}

// A trace without GPU metrics: no metric rows, nor a word of them.
TEST(HtmlReportTest, NoGpuMetricsNoMetricRows) {
  tracesmith::testing::TempDir dir;
  const std::string trace = dir / "app.sbt";
  ASSERT_TRUE(format::WriteTraceFile(tracesmith::testing::AppEventTrace(), trace).ok());
  const std::string html = Build(trace);
  EXPECT_EQ(html.find("under the streams the GPU metrics (profile --gpu-metrics) and"),
            std::string::npos);
  const Json page = Block(html, "ts-page");
  const Json& tl = page["timeline"];
  EXPECT_TRUE(tl["gpu_metrics"].empty());
  EXPECT_EQ(tl["gpu_metrics_omitted"], 0);
}

// A synthetic trace of about 1 M events (kernels, their launch calls,
// copies, syncs, NVTX ranges, allocations): the page holds aggregates only.
TEST(HtmlReportTest, SizeIsBoundedOnAMillionEvents) {
  model::SyntheticOptions so;
  so.kernels = 470'000;
  so.alloc_every = 20;
  model::Trace t = model::MakeSyntheticTrace(so);
  uint64_t events = 0;
  model::ForEachRecordType([&]<typename T>() {
    if constexpr (model::RecordTraits<T>::kIsEvent) events += t.Rows<T>().size();
  });
  ASSERT_GE(events, 1'000'000u);
  tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(t, path.path()).ok());
  t = model::Trace();
  HtmlReportSummary summary;
  const std::string html = Build(path.path(), &summary);
  EXPECT_EQ(summary.kernels, 470'000u);
  EXPECT_GT(summary.memory_series, 0u);
  EXPECT_LT(html.size(), 3u << 20) << "a 1 M-event page should stay under 3 MiB";
  EXPECT_GT(html.size(), 20u << 10);
}

// The page's script under node, with a DOM stub (tests/report/page_dom_check.js):
// renders every section and survives the interactions. Skipped without node.
TEST(HtmlReportTest, ScriptRunsUnderNode) {
  if (!HaveNode())
    GTEST_SKIP() << "node is not installed (apt-get install nodejs): the page's script was not run";
  tracesmith::testing::TempDir dir;
  for (const char* name : {"transformer_train", "mlp_train", "launch_loop"})
    EXPECT_EQ(DomCheck(dir / (std::string(name) + ".html"), Build(Shipped(name)), ""), 0) << name;
}

}  // namespace
}  // namespace tracesmith::report
