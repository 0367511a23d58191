// The SQLite export against the nsys schema on real traces (issue #14 item 5):
// our own SQL rewrite of the `nsys stats` summary reports
// (tests/export/nsys_reports.cc, written from their documented output) runs on
// the exports of the shipped captures and of a real torch.profiler trace and is
// compared with golden files (tests/export/golden/<trace>.<report>.txt).
// Not nsys parity: the goldens were written by that same SQL (TS_UPDATE_GOLDEN=1)
// and have never been compared with a report printed by nsys itself, so they
// catch changes of the export, not disagreements with nsys. With
// TS_UPDATE_GOLDEN set the golden tests rewrite the files and FAIL (nothing was
// compared); review the diff, then run again without it. Plus the tables and
// encodings nsys tools rely on: short names, NVTX domains, GPU-side annotations
// apart from host ranges, PROFILER_OVERHEAD, session start, streams, enum tables.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <regex>
#include <set>

#include "export/nsys_reports.h"
#include "export/sqlite_schema.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/import/import.h"

namespace tracesmith {
namespace {

using testing::NsysReport;
using testing::TempPath;

std::string SourceDir() {
  const char* src = std::getenv("TS_SOURCE_DIR");
  return src ? src : ".";
}
std::string ShippedTrace(const std::string& name) {
  return SourceDir() + "/examples/traces/" + name + ".sbt";
}
std::string TorchTrace() { return SourceDir() + "/tests/export/data/torch_profiler_mlp.json.gz"; }

// An export opened with sqlite3; closed and removed at the end of the test.
class Export {
 public:
  explicit Export(const std::string& sbt) {
    auto s = exporter::ExportSbtFile(sbt, exporter::ExportFormat::kSqlite, db_.path());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    Open();
  }
  explicit Export(const model::Trace& t) {
    auto s = exporter::ExportTrace(t, exporter::ExportFormat::kSqlite, db_.path());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    Open();
  }
  ~Export() { sqlite3_close(h_); }
  sqlite3* db() const { return h_; }

  // All rows of a query, each as its columns' text ("NULL" for NULL).
  std::vector<std::vector<std::string>> Rows(const std::string& sql) const {
    std::vector<std::vector<std::string>> rows;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(h_);
      return rows;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        const unsigned char* t = sqlite3_column_text(st, i);
        row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    return rows;
  }
  int64_t Int(const std::string& sql) const {
    auto rows = Rows(sql);
    return rows.empty() || rows[0].empty() || rows[0][0] == "NULL" ? -1 : std::stoll(rows[0][0]);
  }

 private:
  void Open() { EXPECT_EQ(sqlite3_open(db_.path().c_str(), &h_), SQLITE_OK); }
  TempPath db_{".sqlite"};
  sqlite3* h_ = nullptr;
};

void ExpectGolden(const Export& e, const std::string& trace, NsysReport report) {
  auto rows = testing::RunNsysReport(e.db(), report);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::string text = testing::FormatNsysReport(report, *rows);
  std::string golden = SourceDir() + "/tests/export/golden/" + trace + "." +
                       testing::NsysReportName(report) + ".txt";
  if (std::getenv("TS_UPDATE_GOLDEN")) {
    ASSERT_TRUE(WriteStringToFile(golden, text).ok()) << golden;
    ADD_FAILURE() << "rewrote " << golden
                  << " (TS_UPDATE_GOLDEN is set: nothing compared; review the diff, then run "
                     "again without it)";
    return;
  }
  auto want = ReadFileToString(golden);
  ASSERT_TRUE(want.ok()) << golden;
  EXPECT_EQ(text, *want) << golden;
}

constexpr NsysReport kCudaReports[] = {NsysReport::kCudaGpuKernSum, NsysReport::kCudaGpuKernSumBase,
                                       NsysReport::kCudaApiSum, NsysReport::kCudaGpuMemTimeSum};

// (the goldens: our own SQL's output, never checked against nsys; see the top)
TEST(SqliteNsys, OwnNsysStyleReportsOnShippedTracesMatchTheirGolden) {
  for (const char* trace : {"transformer_train", "mlp_train", "launch_loop"}) {
    SCOPED_TRACE(trace);
    Export e(ShippedTrace(trace));
    for (NsysReport r : kCudaReports) ExpectGolden(e, trace, r);
  }
}

TEST(SqliteNsys, OwnNsysStyleReportsOnTorchProfilerTraceMatchTheirGolden) {
  auto t = importer::ImportFile(TorchTrace());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Export e(*t);
  for (NsysReport r : kCudaReports) ExpectGolden(e, "torch_profiler_mlp", r);
  ExpectGolden(e, "torch_profiler_mlp", NsysReport::kNvtxSum);
}

// The report totals are the trace's own: every kernel, API call, copy and
// memset counted once, with its duration.
TEST(SqliteNsys, ReportTotalsAreTheTraces) {
  std::string path = ShippedTrace("transformer_train");
  auto t = format::ReadTraceFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Export e(path);
  auto sum = [&](NsysReport r) {
    auto rows = testing::RunNsysReport(e.db(), r);
    EXPECT_TRUE(rows.ok());
    std::pair<int64_t, int64_t> s{0, 0};
    double pct = 0;
    for (const auto& row : *rows)
      s.first += row.count, s.second += row.total, pct += row.time_percent;
    if (!rows->empty()) {
      EXPECT_NEAR(pct, 100.0, 1e-6);
    }
    return s;
  };
  std::pair<int64_t, int64_t> kernels{0, 0}, api{0, 0}, mem{0, 0};
  for (const auto& k : t->Rows<model::KernelEvent>())
    ++kernels.first, kernels.second += k.end_ns - k.start_ns;
  for (const auto& a : t->Rows<model::ApiEvent>()) ++api.first, api.second += a.end_ns - a.start_ns;
  for (const auto& m : t->Rows<model::MemcpyEvent>())
    ++mem.first, mem.second += m.end_ns - m.start_ns;
  for (const auto& m : t->Rows<model::MemsetEvent>())
    ++mem.first, mem.second += m.end_ns - m.start_ns;
  EXPECT_EQ(sum(NsysReport::kCudaGpuKernSum), kernels);
  EXPECT_EQ(sum(NsysReport::kCudaGpuKernSumBase), kernels);
  EXPECT_EQ(sum(NsysReport::kCudaApiSum), api);
  EXPECT_EQ(sum(NsysReport::kCudaGpuMemTimeSum), mem);
}

// shortName is the bare function name: an identifier, and each demangled
// name it stands for names that function (followed by its template
// arguments or parameters), also for "(anonymous namespace)::" kernels.
// Distinct shortNames are the distinct kernel functions of the trace.
TEST(SqliteNsys, ShortNamesAreBareKernelFunctions) {
  for (const char* trace : {"transformer_train", "mlp_train", "launch_loop"}) {
    SCOPED_TRACE(trace);
    Export e(ShippedTrace(trace));
    std::map<std::string, std::set<std::string>> by_short;
    for (const auto& r :
         e.Rows("SELECT DISTINCT s.value, d.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds s ON s.id = k.shortName "
                "JOIN StringIds d ON d.id = k.demangledName"))
      by_short[r[0]].insert(r[1]);
    ASSERT_FALSE(by_short.empty());
    const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
    size_t anonymous = 0;
    for (const auto& [bare, fulls] : by_short) {
      EXPECT_TRUE(std::regex_match(bare, identifier)) << bare;
      for (const std::string& full : fulls) {
        // "<ns>::<bare><...", "void <bare>(...", or a bare C symbol
        const std::regex names_it("(^|[ :])" + bare + "([<(]|$)");
        EXPECT_TRUE(std::regex_search(full, names_it)) << bare << " for " << full;
        anonymous += full.find("(anonymous namespace)::") != std::string::npos;
      }
    }
    if (std::string(trace) == "transformer_train") {
      EXPECT_GT(anonymous, 0u);  // the case the issue is about is in the trace
      EXPECT_EQ(by_short.size(), 29u);
    }
  }
}

// NVTX as nsys stores it: one NvtxDomainCreate row (eventType 75, text = the
// name) per named domain, ranges carry its numeric domainId; torch's
// GPU-side annotations (pid = device, tid = stream) are start/end ranges of
// their own domain with no host thread, never push/pop ranges of a thread;
// torch's "overhead" events go to PROFILER_OVERHEAD.
TEST(SqliteNsys, NvtxDomainsAndGpuAnnotationsOfATorchTrace) {
  auto t = importer::ImportFile(TorchTrace());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Export e(*t);
  auto domains = e.Rows(
      "SELECT domainId, text, globalTid IS NULL FROM NVTX_EVENTS "
      "WHERE eventType = 75 ORDER BY domainId");
  std::map<std::string, std::pair<std::string, std::string>> by_name;
  for (const auto& d : domains) by_name[d[1]] = {d[0], d[2]};
  ASSERT_EQ(domains.size(), 3u);
  EXPECT_EQ(by_name["user_annotation"].first, "1");
  EXPECT_EQ(by_name["cpu_op"].first, "2");
  EXPECT_EQ(by_name["gpu_user_annotation"], std::make_pair(std::string("3"), std::string("1")));
  // Push/pop ranges only on threads of the traced process.
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59 AND "
                  "(globalTid >> 24) NOT IN (SELECT pid FROM PROCESSES)"),
            0);
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59"), 1600 + 1855 + 10);
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 60 AND domainId = 3 AND "
                  "globalTid IS NULL"),
            5);
  // Every range's domain is a domain row or the default domain (0).
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND domainId <> 0 "
                  "AND domainId NOT IN (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75)"),
            0);
  // Kineto's two "Activity Buffer Request" overheads (pid -1): the process.
  auto overhead = e.Rows(
      "SELECT o.globalTid, s.value, o.overheadType, o.end - o.start "
      "FROM PROFILER_OVERHEAD o JOIN StringIds s ON s.id = o.nameId");
  ASSERT_EQ(overhead.size(), 2u);
  for (const auto& o : overhead) {
    EXPECT_EQ(o[0], std::to_string(int64_t{1004} << 24));
    EXPECT_EQ(o[1], "Activity Buffer Request");
    EXPECT_EQ(o[2], "9");
  }
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
                  "WHERE s.value = 'Activity Buffer Request'"),
            0);
}

// CUPTI's overhead records: one PROFILER_OVERHEAD row each, on the thread
// CUPTI named (a thread of the traced process), typed by nsys' overhead ids.
TEST(SqliteNsys, ProfilerOverheadOfACapture) {
  std::string path = ShippedTrace("transformer_train");
  auto t = format::ReadTraceFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Export e(path);
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM PROFILER_OVERHEAD"),
            static_cast<int64_t>(t->Rows<model::OverheadEvent>().size()));
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM PROFILER_OVERHEAD WHERE globalTid IS NULL OR "
                  "(globalTid >> 24) NOT IN (SELECT pid FROM PROCESSES)"),
            0);
  auto types = e.Rows(
      "SELECT e.label, COUNT(*) FROM PROFILER_OVERHEAD o "
      "JOIN ENUM_CUPTI_OVERHEAD_TYPE e ON e.id = o.overheadType "
      "JOIN StringIds s ON s.id = o.nameId AND s.value = e.label "
      "GROUP BY 1 ORDER BY 1");
  int64_t typed = 0;
  std::set<std::string> labels;
  for (const auto& r : types) typed += std::stoll(r[1]), labels.insert(r[0]);
  EXPECT_EQ(typed, static_cast<int64_t>(t->Rows<model::OverheadEvent>().size()));
  EXPECT_TRUE(labels.count("Activity buffer request"));
  EXPECT_TRUE(labels.count("Instrumentation"));
}

// Every overhead type a row can get (NsysOverheadType, TraceSmith's own drain
// kind included) has its ENUM_CUPTI_OVERHEAD_TYPE row with the label the rows'
// names use: a join on the enum keeps every row.
TEST(SqliteNsys, EveryOverheadTypeHasItsEnumRow) {
  Export e(ShippedTrace("transformer_train"));
  const int64_t labels = static_cast<int64_t>(std::size(exporter::sqlite::kOverheadLabels)) - 1;
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM ENUM_CUPTI_OVERHEAD_TYPE"), labels);
  for (int64_t id = 1; id <= labels; ++id)
    EXPECT_EQ(e.Rows("SELECT label FROM ENUM_CUPTI_OVERHEAD_TYPE WHERE id = " + std::to_string(id))
                  .at(0)
                  .at(0),
              exporter::sqlite::kOverheadLabels[id])
        << id;
  EXPECT_EQ(exporter::sqlite::NsysOverheadType(model::kOverheadPcSamplingDrain), labels);
}

// The tables nsys stats and recipes look up besides the activity tables.
TEST(SqliteNsys, SessionStreamsMetadataAndEnums) {
  std::string path = ShippedTrace("transformer_train");
  auto t = format::ReadTraceFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Export e(path);
  for (const char* table :
       {"EXPORT_META_DATA", "META_DATA_EXPORT", "ANALYSIS_DETAILS",
        "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_CUDA_STREAM", "PROFILER_OVERHEAD",
        "ENUM_NSYS_EVENT_TYPE", "ENUM_NSYS_EVENT_CLASS", "ENUM_CUDA_MEMCPY_OPER",
        "ENUM_CUDA_MEM_KIND", "ENUM_CUDA_DEV_MEM_EVENT_OPER", "ENUM_CUPTI_SYNC_TYPE",
        "ENUM_CUPTI_STREAM_TYPE", "ENUM_CUPTI_OVERHEAD_TYPE"})
    EXPECT_GT(e.Int(std::string("SELECT COUNT(*) FROM ") + table), 0) << table;
  EXPECT_EQ(
      e.Rows("SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_SCHEMA_VERSION'").size(), 1u);
  // Times count from the session start; utcEpochNs + start is the event's
  // UTC time (through the trace's clock anchor).
  uint64_t first = UINT64_MAX;
  for (const auto& k : t->Rows<model::KernelEvent>()) first = std::min(first, k.start_ns);
  int64_t utc = e.Int("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME");
  int64_t rel = e.Int("SELECT MIN(start) FROM CUPTI_ACTIVITY_KIND_KERNEL");
  int64_t offset = 0;
  for (const auto& a : t->Rows<model::ClockAnchor>()) {
    if (a.realtime_ns && a.gpu_ns) {
      offset = static_cast<int64_t>(a.realtime_ns - a.gpu_ns);
      break;
    }
  }
  EXPECT_EQ(utc + rel, static_cast<int64_t>(first) + offset);
  EXPECT_EQ(e.Int("SELECT MIN(start) FROM (SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
                  "SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME UNION ALL "
                  "SELECT start FROM PROFILER_OVERHEAD)"),
            0);
  // One stream row per (process, context, stream) with GPU work.
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM TARGET_INFO_CUDA_STREAM"),
            e.Int("SELECT COUNT(*) FROM (SELECT DISTINCT globalPid >> 24, contextId, streamId FROM "
                  "(SELECT globalPid, contextId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION "
                  "SELECT globalPid, contextId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION "
                  "SELECT globalPid, contextId, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET))"));
  // Memory kinds in nsys' numbering: a host-to-device copy's source is
  // pageable or pinned host memory, its destination device memory.
  EXPECT_EQ(e.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
                  "JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind "
                  "JOIN ENUM_CUDA_MEM_KIND d ON d.id = m.dstKind "
                  "WHERE m.copyKind = 1 AND (s.label NOT IN ('Pageable', 'Pinned') OR "
                  "d.label <> 'Device')"),
            0);
  EXPECT_GT(e.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1"), 0);
}

}  // namespace
}  // namespace tracesmith
