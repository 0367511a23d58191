// GPU instruction samples in the exports (src/export/kernel_samples.h) on the
// hand-built trace of testing/pc_sample_trace.h, whose counts are known:
// Perfetto annotates each kernel slice of a sampled function with its
// summary (and only those slices, at a bounded cost per slice), SQLite gets
// the TRACESMITH_PC_* tables, a file streamed from SBT gives the same, and
// the JSON export does not change.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "export/perfetto_checker.h"
#include "testing/pc_sample_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith {
namespace {

using exporter::ExportFormat;
using testing::PcSampleTrace;
using testing::TempPath;

constexpr const char* kPcSamplesArg = "pc samples (all launches)";
constexpr const char* kPcStallArg = "top stall (all launches)";
constexpr const char* kPcLineArg = "hottest line (all launches)";

// PcSampleTrace with `extra` more launches of probe_hot and one launch of a
// kernel that was not sampled.
model::Trace PcExportTrace(bool samples, size_t extra = 0) {
  model::Trace t = PcSampleTrace({.samples = samples});
  // The samples' drain windows start with the first kernel, so that the
  // trace's time range (and so every timestamp exported) is the same without them.
  for (model::PcSampleEvent& e : t.Rows<model::PcSampleEvent>())
    e.start_ns = std::max<uint64_t>(e.start_ns, 1000);
  model::KernelEvent hot{};
  for (const model::KernelEvent& k : t.Rows<model::KernelEvent>())
    if (t.strings.Get(k.name_id) == "_Z9probe_hotPfi") hot = k;
  uint64_t clock = hot.end_ns + 10;
  for (size_t i = 0; i < extra; ++i) {
    model::KernelEvent k = hot;
    k.start_ns = clock;
    k.end_ns = clock + 100;
    clock += 110;
    t.Rows<model::KernelEvent>().push_back(k);
  }
  model::KernelEvent other = hot;
  other.start_ns = clock;
  other.end_ns = clock + 50;
  other.name_id = t.strings.Intern("_Z5otherv");
  other.demangled_id = t.strings.Intern("other()");
  t.Rows<model::KernelEvent>().push_back(other);
  return t;
}

testing::PerfettoCheck PcPerfetto(const model::Trace& t, exporter::ExportStats* stats = nullptr) {
  TempPath out(".pftrace");
  auto s = exporter::ExportTrace(t, ExportFormat::kPerfetto, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok() && stats) *stats = *s;
  auto bytes = ReadFileToString(out.path());
  EXPECT_TRUE(bytes.ok());
  return testing::CheckPerfettoTrace(bytes.ok() ? *bytes : "");
}

TEST(PcSampleExport, PerfettoKernelSlicesCarryTheirFunctionsSummary) {
  const testing::PerfettoCheck c = PcPerfetto(PcExportTrace(true));
  ASSERT_TRUE(c.ok()) << c.Summary();
  std::map<std::string, size_t> annotated;
  for (const testing::PerfettoSlice& s : c.slices) {
    if (!s.args.count("launch")) continue;  // kernels only
    if (s.name == "other()") {
      EXPECT_FALSE(s.args.count(kPcSamplesArg)) << "not sampled";
      continue;
    }
    ASSERT_TRUE(s.args.count(kPcSamplesArg)) << s.name;
    ++annotated[s.name];
    if (s.name == "probe_mem(float const*, float*, int)") {
      EXPECT_EQ(s.args.at(kPcSamplesArg), "1000");
      EXPECT_EQ(s.args.at(kPcStallArg), "long_scoreboard 76.0%");
      EXPECT_EQ(s.args.at(kPcLineArg), "kernels.cu:42 81.0%");
    } else if (s.name == "probe_hot(float*, int)") {
      EXPECT_EQ(s.args.at(kPcSamplesArg), "2000");
      EXPECT_EQ(s.args.at(kPcStallArg), "wait 45.0%");
      EXPECT_EQ(s.args.at(kPcLineArg), "kernels.cu:66 99.7%");
    } else {
      EXPECT_EQ(s.args.at(kPcStallArg), "wait 55.0%");
      EXPECT_EQ(s.args.at(kPcLineArg), "(no line info: compile with -lineinfo) 100.0%");
    }
  }
  EXPECT_EQ(annotated.size(), 3u);
  for (const auto& [name, n] : annotated) EXPECT_EQ(n, 2u) << name;  // both launches

  // Without samples: no such annotation.
  const testing::PerfettoCheck plain = PcPerfetto(PcExportTrace(false));
  ASSERT_TRUE(plain.ok()) << plain.Summary();
  for (const testing::PerfettoSlice& s : plain.slices) EXPECT_FALSE(s.args.count(kPcSamplesArg));
}

// One summary per function, interned: each sampled slice costs the same few
// bytes however many samples or launches there are.
TEST(PcSampleExport, PerfettoCostPerSlice) {
  exporter::ExportStats with, without;
  PcPerfetto(PcExportTrace(true, 2000), &with);
  PcPerfetto(PcExportTrace(false, 2000), &without);
  ASSERT_EQ(with.kernel_events, without.kernel_events);
  const double per_slice =
      double(with.kernel_bytes - without.kernel_bytes) / double(with.kernel_events - 1);
  EXPECT_GT(per_slice, 10.0);
  EXPECT_LT(per_slice, 24.0);  // a uint and two interned strings: 21.1 bytes here
}

// The SBT file streamed in two passes annotates as the in-memory trace does.
TEST(PcSampleExport, PerfettoFromSbtFile) {
  TempPath sbt(".sbt"), out(".pftrace");
  ASSERT_TRUE(format::WriteTraceFile(PcExportTrace(true), sbt.path()).ok());
  ASSERT_TRUE(exporter::ExportSbtFile(sbt.path(), ExportFormat::kPerfetto, out.path()).ok());
  auto bytes = ReadFileToString(out.path());
  ASSERT_TRUE(bytes.ok());
  const testing::PerfettoCheck c = testing::CheckPerfettoTrace(*bytes);
  ASSERT_TRUE(c.ok()) << c.Summary();
  size_t annotated = 0;
  for (const testing::PerfettoSlice& s : c.slices) {
    if (!s.args.count(kPcStallArg)) continue;
    ++annotated;
    if (s.name.starts_with("probe_mem")) {
      EXPECT_EQ(s.args.at(kPcStallArg), "long_scoreboard 76.0%");
    }
  }
  EXPECT_EQ(annotated, 6u);
}

// Runs `sql` on `db` and returns the first column of each row as text ("NULL").
std::vector<std::string> PcQuery(sqlite3* db, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db) << ": " << sql;
  while (st && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* v = sqlite3_column_text(st, 0);
    out.push_back(v ? reinterpret_cast<const char*>(v) : "NULL");
  }
  sqlite3_finalize(st);
  return out;
}

TEST(PcSampleExport, SqliteTables) {
  model::Trace t = PcExportTrace(true);
  model::PcSass sass{};  // probe_mem's hot instruction disassembled
  sass.pc_offset = 0x100;
  sass.text_id = t.strings.Intern("LDG.E R5, desc[UR4][R16.64]");
  sass.pid = 100;
  sass.cubin_crc = 0xC0FFEE;
  sass.function_id = t.strings.Intern("_Z9probe_memPKfPfi");
  t.Rows<model::PcSass>().push_back(sass);
  TempPath db(".sqlite");
  ASSERT_TRUE(exporter::ExportTrace(t, ExportFormat::kSqlite, db.path()).ok());
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.path().c_str(), &h), SQLITE_OK);
  auto q = [&](const std::string& sql) { return PcQuery(h, sql); };
  // Every counted sample once; the _not_issued subset beside its reason.
  EXPECT_EQ(q("SELECT SUM(samples) FROM TRACESMITH_PC_SAMPLES"), std::vector<std::string>{"4000"});
  EXPECT_EQ(q("SELECT SUM(notIssued) FROM TRACESMITH_PC_SAMPLES"), std::vector<std::string>{"300"});
  const std::string mem_hot =
      "SELECT p.samples || ' ' || p.notIssued || ' ' || f.value || ':' || p.line || ' ' || "
      "x.value || ' ' || s.value FROM TRACESMITH_PC_SAMPLES p "
      "JOIN StringIds f ON f.id = p.fileId JOIN StringIds x ON x.id = p.sassId "
      "JOIN StringIds s ON s.id = p.stallId WHERE p.pcOffset = 256 ORDER BY p.samples DESC";
  EXPECT_EQ(q(mem_hot), (std::vector<std::string>{
                            "600 300 /src/probe/kernels.cu:42 LDG.E R5, desc[UR4][R16.64] "
                            "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                            "210 0 /src/probe/kernels.cu:42 LDG.E R5, desc[UR4][R16.64] "
                            "smsp__pcsamp_warps_issue_stalled_lg_throttle"}));
  // An instruction without a PcLine row: no file, line or SASS.
  EXPECT_EQ(q("SELECT COALESCE(fileId, 'NULL') || COALESCE(line, 'NULL') || "
              "COALESCE(sassId, 'NULL') FROM TRACESMITH_PC_SAMPLES WHERE pcOffset = 512"),
            (std::vector<std::string>{"NULLNULLNULL", "NULLNULLNULL"}));
  // Per function, joined to its kernels by the mangled name (as nsys' mangledName).
  EXPECT_EQ(q("SELECT n.value || ' ' || f.samples || ' ' || f.samplesPct || ' ' || s.value || ' ' "
              "|| f.topStallPct || ' ' || COALESCE(f.hottestLine, 'NULL') || ' ' || "
              "f.hottestLinePct || ' ' || (SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
              "WHERE k.mangledName = f.functionId AND k.globalPid = f.globalPid) "
              "FROM TRACESMITH_PC_FUNCTIONS f JOIN StringIds n ON n.id = f.nameId "
              "JOIN StringIds s ON s.id = f.topStallId ORDER BY f.samples DESC, n.value"),
            (std::vector<std::string>{
                "probe_hot(float*, int) 2000 50.0 smsp__pcsamp_warps_issue_stalled_wait 45.0 "
                "66 99.7 2",
                "probe_fma(float*, int) 1000 25.0 smsp__pcsamp_warps_issue_stalled_wait 55.0 "
                "NULL 100.0 2",
                "probe_mem(float const*, float*, int) 1000 25.0 "
                "smsp__pcsamp_warps_issue_stalled_long_scoreboard 76.0 42 81.0 2"}));
  // The hottest line's file is the trace's string, as in the samples' rows.
  EXPECT_EQ(q("SELECT COUNT(*) FROM TRACESMITH_PC_FUNCTIONS f JOIN TRACESMITH_PC_SAMPLES p "
              "ON p.fileId = f.hottestFileId AND p.line = f.hottestLine AND p.functionId = "
              "f.functionId WHERE f.hottestLine = 42"),
            std::vector<std::string>{"2"});
  sqlite3_close(h);

  // Streamed from an SBT file: the same rows, the kernels' demangled names too.
  TempPath sbt(".sbt"), streamed(".sqlite");
  ASSERT_TRUE(format::WriteTraceFile(t, sbt.path()).ok());
  ASSERT_TRUE(exporter::ExportSbtFile(sbt.path(), ExportFormat::kSqlite, streamed.path()).ok());
  ASSERT_EQ(sqlite3_open(streamed.path().c_str(), &h), SQLITE_OK);
  EXPECT_EQ(PcQuery(h,
                    "SELECT n.value || ' ' || f.samples FROM TRACESMITH_PC_FUNCTIONS f JOIN "
                    "StringIds n ON n.id = f.nameId ORDER BY n.value"),
            (std::vector<std::string>{"probe_fma(float*, int) 1000", "probe_hot(float*, int) 2000",
                                      "probe_mem(float const*, float*, int) 1000"}));
  EXPECT_EQ(PcQuery(h, "SELECT SUM(samples) FROM TRACESMITH_PC_SAMPLES"),
            std::vector<std::string>{"4000"});
  sqlite3_close(h);

  // Without samples: no such tables.
  TempPath plain(".sqlite");
  ASSERT_TRUE(
      exporter::ExportTrace(PcExportTrace(false), ExportFormat::kSqlite, plain.path()).ok());
  ASSERT_EQ(sqlite3_open(plain.path().c_str(), &h), SQLITE_OK);
  EXPECT_EQ(PcQuery(h, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'TRACESMITH_%'"),
            std::vector<std::string>{"0"});
  sqlite3_close(h);
}

// The JSON export (Kineto's format, which has no place for them) is the same
// with and without samples, but for its trace_id (a hash that counts every
// event row of the trace, the samples' among them).
TEST(PcSampleExport, JsonUnchanged) {
  TempPath a(".json"), b(".json");
  ASSERT_TRUE(exporter::ExportTrace(PcExportTrace(true), ExportFormat::kJson, a.path()).ok());
  ASSERT_TRUE(exporter::ExportTrace(PcExportTrace(false), ExportFormat::kJson, b.path()).ok());
  auto ja = ReadFileToString(a.path()), jb = ReadFileToString(b.path());
  ASSERT_TRUE(ja.ok() && jb.ok());
  auto without_id = [](std::string s) {
    const size_t at = s.find("\"trace_id\"");
    return at == std::string::npos ? s : s.erase(at, s.find('\n', at) - at);
  };
  EXPECT_NE(ja->find("\"trace_id\""), std::string::npos);
  EXPECT_EQ(without_id(*ja), without_id(*jb));
}

}  // namespace
}  // namespace tracesmith
