// SQLite exporter: nsys-style SQL gives the numbers computed directly from
// the trace (the kernel summary of `nsys stats`' cuda_gpu_kern_sum report).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <set>

#include "testing/temp_file.h"
#include "tracesmith/export/export.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

using namespace model;
using testing::TempPath;

struct Summary {
  uint64_t count = 0, total = 0, min = UINT64_MAX, max = 0;
};

TEST(SqliteExport, KernelSummaryQueryMatchesTrace) {
  SyntheticOptions o;
  o.kernels = 5000;
  o.kernel_names = 15;
  Trace t = MakeSyntheticTrace(o);
  TempPath db(".sqlite");
  auto s = exporter::ExportTrace(t, exporter::ExportFormat::kSqlite, db.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();

  std::map<std::string, Summary> expected;
  for (const auto& k : t.Rows<KernelEvent>()) {
    Summary& e = expected[std::string(t.strings.Get(k.demangled_id))];
    uint64_t d = k.end_ns - k.start_ns;
    ++e.count;
    e.total += d;
    e.min = std::min(e.min, d);
    e.max = std::max(e.max, d);
  }

  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.path().c_str(), &h), SQLITE_OK);
  const char* sql =
      "SELECT s.value, COUNT(*), SUM(k.end - k.start), AVG(k.end - k.start), "
      "MIN(k.end - k.start), MAX(k.end - k.start) "
      "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName "
      "GROUP BY s.value ORDER BY SUM(k.end - k.start) DESC";
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h, sql, -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  size_t rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    ++rows;
    std::string name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    ASSERT_TRUE(expected.count(name)) << name;
    const Summary& e = expected[name];
    EXPECT_EQ(static_cast<uint64_t>(sqlite3_column_int64(st, 1)), e.count);
    EXPECT_EQ(static_cast<uint64_t>(sqlite3_column_int64(st, 2)), e.total);
    EXPECT_DOUBLE_EQ(sqlite3_column_double(st, 3), static_cast<double>(e.total) / e.count);
    EXPECT_EQ(static_cast<uint64_t>(sqlite3_column_int64(st, 4)), e.min);
    EXPECT_EQ(static_cast<uint64_t>(sqlite3_column_int64(st, 5)), e.max);
  }
  sqlite3_finalize(st);
  EXPECT_EQ(rows, expected.size());

  // Launch calls joined to their kernels by correlation id, nsys style.
  sqlite3_prepare_v2(h,
                     "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r "
                     "JOIN CUPTI_ACTIVITY_KIND_KERNEL AS k ON k.correlationId = r.correlationId "
                     "JOIN StringIds AS s ON s.id = r.nameId WHERE s.value = 'cudaLaunchKernel'",
                     -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(static_cast<size_t>(sqlite3_column_int64(st, 0)), t.Rows<KernelEvent>().size());
  sqlite3_finalize(st);

  // shortName is the bare function name ("void gemm_tn_kernel<64, 0>(...)" -> "gemm_tn_kernel").
  sqlite3_prepare_v2(h,
                     "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                     "JOIN StringIds AS s ON s.id = k.shortName ORDER BY 1 LIMIT 1",
                     -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  std::string short_name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  EXPECT_EQ(short_name.find_first_of("<( "), std::string::npos) << short_name;
  EXPECT_NE(short_name.find("_kernel"), std::string::npos) << short_name;
  sqlite3_finalize(st);

  // globalTid encodes pid and tid as nsys does.
  sqlite3_prepare_v2(h, "SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME", -1, &st,
                     nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  int64_t gtid = sqlite3_column_int64(st, 0);
  EXPECT_EQ((gtid >> 24) & 0xffffff, o.pid);
  EXPECT_EQ(gtid & 0xffffff, o.pid + 1);
  sqlite3_finalize(st);
  sqlite3_close(h);
}

// shortName on a real PyTorch capture: the bare name also for kernels in
// anonymous namespaces and lambdas (issue #14 item 5: 8 of 26 distinct
// kernels of a torch trace kept their whole signature).
TEST(SqliteExport, ShortNamesOfARealTorchTrace) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  const std::string in = std::string(src ? src : ".") + "/examples/traces/transformer_train.sbt";
  TempPath db(".sqlite");
  auto s = exporter::ExportSbtFile(in, exporter::ExportFormat::kSqlite, db.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.path().c_str(), &h), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h,
                               "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                               "JOIN StringIds AS s ON s.id = k.shortName",
                               -1, &st, nullptr),
            SQLITE_OK);
  std::set<std::string> names;
  while (sqlite3_step(st) == SQLITE_ROW)
    names.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  sqlite3_close(h);
  EXPECT_GE(names.size(), 20u);
  for (const std::string& n : names) EXPECT_EQ(n.find_first_of("<>(): "), std::string::npos) << n;
  EXPECT_TRUE(names.count("distribution_elementwise_grid_stride_kernel"));
  EXPECT_TRUE(names.count("multi_tensor_apply_kernel"));
  EXPECT_TRUE(names.count("softmax_warp_forward"));
  EXPECT_TRUE(names.count("vectorized_elementwise_kernel"));
}

TEST(CsvExport, OneRowPerGpuOpWithQuoting) {
  Trace t;
  KernelEvent k{};
  k.start_ns = 10;
  k.end_ns = 30;
  k.name_id = t.strings.Intern("void f<1, 2>(int, \"x\")");
  t.Rows<KernelEvent>().push_back(k);
  MemcpyEvent m{};
  m.start_ns = 40;
  m.end_ns = 1040;
  m.bytes = 4000;
  m.copy_kind = kCopyHtoD;
  t.Rows<MemcpyEvent>().push_back(m);
  TempPath csv(".csv");
  ASSERT_TRUE(exporter::ExportTrace(t, exporter::ExportFormat::kCsv, csv.path()).ok());
  FILE* f = std::fopen(csv.path().c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[1024];
  std::vector<std::string> lines;
  while (std::fgets(line, sizeof line, f)) lines.push_back(line);
  std::fclose(f);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].rfind("kernel,\"void f<1, 2>(int, \"\"x\"\")\",10,30,20,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("memcpy,Memcpy HtoD,40,1040,1000,", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find(",4000,HtoD,4\n"), std::string::npos) << lines[2];  // 4000 B / 1000 ns
}

}  // namespace
}  // namespace tracesmith
