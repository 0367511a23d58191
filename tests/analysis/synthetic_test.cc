// Consistency on a realistic synthetic trace (model/synthetic.h): the report
// from a streamed SBT file equals the report from memory, every event is
// counted once, busy time matches a plain sort-and-merge, row order does not
// matter, and the DOT export respects its node limit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <set>
#include <sstream>

#include "testing/temp_file.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::analysis {
namespace {

model::Trace Synthetic() {
  model::SyntheticOptions so;
  so.kernels = 20000;
  so.seed = 5;
  return model::MakeSyntheticTrace(so);
}

AnalysisReport FromMemory(const model::Trace& t, CompactTrace* c) {
  c->IngestAll(t);
  c->Finalize();
  return BuildReport(*c, "synthetic");
}

// Device busy time by the textbook method: sort all intervals, merge.
uint64_t PlainBusy(const model::Trace& t, uint32_t device) {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  for (const auto& k : t.Rows<model::KernelEvent>())
    if (k.device_id == device) v.push_back({k.start_ns, k.end_ns});
  for (const auto& m : t.Rows<model::MemcpyEvent>())
    if (m.device_id == device) v.push_back({m.start_ns, m.end_ns});
  std::sort(v.begin(), v.end());
  uint64_t busy = 0, cs = 0, ce = 0;
  bool open = false;
  for (auto [s, e] : v) {
    if (open && s <= ce) {
      ce = std::max(ce, e);
      continue;
    }
    if (open) busy += ce - cs;
    cs = s, ce = e, open = true;
  }
  if (open) busy += ce - cs;
  return busy;
}

TEST(SyntheticTest, StreamedFileMatchesMemoryAndPlainComputation) {
  model::Trace t = Synthetic();
  CompactTrace mem;
  AnalysisReport a = FromMemory(t, &mem);

  tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(t, path.path(), {.rows_per_chunk = 1000}).ok());
  CompactTrace streamed;
  ASSERT_TRUE(LoadCompactTrace(path.path(), {}, &streamed).ok());
  AnalysisReport b = BuildReport(streamed, "synthetic");
  std::ostringstream ta, tb;
  WriteJsonReport(a, ta);
  WriteJsonReport(b, tb);
  EXPECT_EQ(ta.str(), tb.str());

  // Every kernel once.
  const auto& rows = t.Rows<model::KernelEvent>();
  uint64_t total = 0, count = 0;
  for (const auto& k : rows) total += k.end_ns - k.start_ns;
  for (const NamedStats& n : a.kernels) count += n.stats.count;
  EXPECT_EQ(count, rows.size());
  EXPECT_EQ(a.kernel_count, rows.size());
  EXPECT_EQ(a.kernel_ns, total);
  ASSERT_FALSE(a.launches.empty());
  EXPECT_EQ(a.launches[0].api, "cudaLaunchKernel");
  EXPECT_EQ(a.launches[0].api_duration.count, rows.size());

  for (const DeviceTimeline& d : a.timeline.devices) {
    EXPECT_EQ(d.busy_ns, PlainBusy(t, d.device)) << "device " << d.device;
    EXPECT_EQ(d.busy_ns + d.idle.total_ns(), a.wall_ns());
    EXPECT_GE(d.stream_busy_sum_ns, d.busy_ns);
  }
  for (const StreamTimeline& s : a.timeline.streams) {
    uint64_t sum = 0;
    for (uint64_t ns : s.state_ns) sum += ns;
    EXPECT_EQ(sum, a.wall_ns());
    EXPECT_EQ(s.state_ns[int(StreamState::kRunning)], s.busy_ns);
    EXPECT_EQ(s.busy_ns + s.idle.total_ns(), a.wall_ns());
  }
  uint64_t path_ns = 0;
  for (uint64_t ns : a.critical_path_ns) path_ns += ns;
  EXPECT_EQ(path_ns, a.wall_ns());
  EXPECT_GE(a.findings.size(), 3u);
  EXPECT_LE(a.findings.size(), 10u);
}

TEST(SyntheticTest, RowOrderDoesNotMatter) {
  model::Trace t = Synthetic();
  CompactTrace c1;
  AnalysisReport a = FromMemory(t, &c1);
  std::mt19937 rng(1);
  auto& k = t.Rows<model::KernelEvent>();
  std::shuffle(k.begin(), k.end(), rng);
  auto& api = t.Rows<model::ApiEvent>();
  std::shuffle(api.begin(), api.end(), rng);
  CompactTrace c2;
  AnalysisReport b = FromMemory(t, &c2);
  EXPECT_GT(c2.stats().lanes_resorted, 0u);  // a shuffle is far outside the window
  std::ostringstream ta, tb;
  WriteJsonReport(a, ta);
  WriteJsonReport(b, tb);
  std::string sa = ta.str(), sb = tb.str();
  // Only the data-quality counter differs.
  auto strip = [](std::string s) { return s.substr(0, s.find("\"data_quality\"")); };
  EXPECT_EQ(strip(sa), strip(sb));
}

// The ops and calls as arrays or packed (record_store.h): the same report, byte for byte.
TEST(SyntheticTest, PackedRecordsGiveTheSameReport) {
  const model::Trace t = Synthetic();
  std::string json[2];
  for (RecordForm form : {RecordForm::kArrays, RecordForm::kPacked}) {
    CompactTrace c;
    c.SetRecordForm(form);
    std::ostringstream out;
    WriteJsonReport(FromMemory(t, &c), out);
    json[int(form)] = out.str();
  }
  EXPECT_GT(json[0].size(), 1000u);
  EXPECT_EQ(json[0], json[1]);
}

// TRACESMITH_RECORDS chooses the form; unset or auto, the size does; any other value is an
// error that names the variable, and loading fails with it.
TEST(SyntheticTest, RecordFormIsChosenBySizeOrTheEnvironment) {
  const char* before = std::getenv(kRecordFormEnv);
  const std::string saved = before ? before : "";
  auto Form = [](uint64_t records) {
    StatusOr<RecordForm> f = ChooseRecordForm(records);
    return f.ok() ? int(*f) : -1;
  };
  unsetenv(kRecordFormEnv);
  EXPECT_EQ(Form(kPackedFromRecords - 1), int(RecordForm::kArrays));
  EXPECT_EQ(Form(kPackedFromRecords), int(RecordForm::kPacked));
  setenv(kRecordFormEnv, "auto", 1);
  EXPECT_EQ(Form(kPackedFromRecords), int(RecordForm::kPacked));
  setenv(kRecordFormEnv, "packed", 1);
  EXPECT_EQ(Form(10), int(RecordForm::kPacked));
  setenv(kRecordFormEnv, "arrays", 1);
  EXPECT_EQ(Form(kPackedFromRecords * 4), int(RecordForm::kArrays));
  setenv(kRecordFormEnv, "compressed", 1);
  const StatusOr<RecordForm> bad = ChooseRecordForm(10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TRACESMITH_RECORDS=compressed"), std::string::npos);
  tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(Synthetic(), path.path()).ok());
  CompactTrace c;
  EXPECT_FALSE(LoadCompactTrace(path.path(), {}, &c).ok());
  setenv(kRecordFormEnv, "packed", 1);
  CompactTrace p;
  ASSERT_TRUE(LoadCompactTrace(path.path(), {}, &p).ok());
  EXPECT_EQ(p.record_form(), RecordForm::kPacked);
  if (before)
    setenv(kRecordFormEnv, saved.c_str(), 1);
  else
    unsetenv(kRecordFormEnv);
}

TEST(SyntheticTest, DotRespectsNodeLimit) {
  model::Trace t = Synthetic();
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  std::ostringstream out;
  ASSERT_TRUE(WriteDot(c, {.node_limit = 50}, out).ok());
  std::string dot = out.str();
  EXPECT_EQ(dot.rfind("digraph tracesmith {", 0), 0u);
  size_t nodes = 0, edges = 0;
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("[label=") != std::string::npos && line.find("->") == std::string::npos) {
      ++nodes;
    }
    if (line.find("->") != std::string::npos) {
      ++edges;
      std::istringstream ls(line);
      std::string from, arrow, to;
      ls >> from >> arrow >> to;
      EXPECT_TRUE(dot.find("    " + from + " [label=") != std::string::npos) << line;
      EXPECT_TRUE(dot.find("    " + to + " [label=") != std::string::npos) << line;
    }
  }
  EXPECT_EQ(nodes, 50u);
  EXPECT_GT(edges, 0u);
  EXPECT_FALSE(WriteDot(c, {.node_limit = 0}, out).ok());
}

}  // namespace
}  // namespace tracesmith::analysis
