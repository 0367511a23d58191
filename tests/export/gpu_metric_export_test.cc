// GPU metrics (GpuMetricSample rows, profile --gpu-metrics) in the exports,
// on the hand-built trace of testing/gpu_metric_trace.h: Perfetto has one
// counter track per metric per GPU under the device track with every
// sample's value, SQLite the GPU_METRICS / TARGET_INFO_GPU_METRICS tables
// in the layout of nsys exports, and a trace without metrics neither.
#include <gtest/gtest.h>

#include <limits>

#include <sqlite3.h>
#include <cmath>

#include <string>
#include <vector>

#include "export/perfetto_checker.h"
#include "testing/gpu_metric_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"

namespace tracesmith {
namespace {

using exporter::ExportFormat;

testing::PerfettoCheck MetricPerfetto(const model::Trace& t) {
  testing::TempPath out(".pftrace");
  auto s = exporter::ExportTrace(t, ExportFormat::kPerfetto, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  auto bytes = ReadFileToString(out.path());
  EXPECT_TRUE(bytes.ok());
  return testing::CheckPerfettoTrace(bytes.ok() ? *bytes : "");
}

TEST(GpuMetricExport, PerfettoCounterTrackPerMetricPerGpu) {
  const testing::PerfettoCheck c = MetricPerfetto(::tracesmith::testing::GpuMetricTrace());
  ASSERT_TRUE(c.ok()) << c.Summary();
  const std::string sm =
      "GPU metric: SM active (sm__cycles_active.avg.pct_of_peak_sustained_elapsed)";
  ASSERT_TRUE(c.counter_values.count(sm)) << c.Summary();
  const std::vector<double>& v = c.counter_values.at(sm);
  ASSERT_EQ(v.size(), 70u);
  EXPECT_EQ(v.front(), 90.0);  // the copy phase
  EXPECT_EQ(v[25], 95.0);      // 3500: gemm alone
  EXPECT_EQ(v.back(), 0.0);    // idle
  size_t metric_tracks = 0;
  for (const auto& [uuid, name] : c.track_names) {
    if (!name.starts_with("GPU metric: ")) continue;
    ++metric_tracks;
    // Under the device's track ("GPU 0: ...").
    ASSERT_TRUE(c.track_parents.count(uuid)) << name;
    EXPECT_EQ(c.track_names.at(c.track_parents.at(uuid)).rfind("GPU 0", 0), 0u) << name;
  }
  EXPECT_EQ(metric_tracks, 3u);
  const testing::PerfettoCheck plain = [] {
    model::Trace t = ::tracesmith::testing::GpuMetricTrace();
    t.Rows<model::GpuMetricSample>().clear();
    return MetricPerfetto(t);
  }();
  for (const auto& [uuid, name] : plain.track_names) EXPECT_FALSE(name.starts_with("GPU metric"));
}

std::vector<std::string> MetricQuery(sqlite3* db, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db) << ": " << sql;
  while (st && sqlite3_step(st) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* v = sqlite3_column_text(st, i);
      row += (i ? "|" : "") + std::string(v ? reinterpret_cast<const char*>(v) : "NULL");
    }
    out.push_back(row);
  }
  sqlite3_finalize(st);
  return out;
}

TEST(GpuMetricExport, SqliteTablesInNsysLayout) {
  testing::TempPath out(".sqlite");
  auto s = exporter::ExportTrace(::tracesmith::testing::GpuMetricTrace(), ExportFormat::kSqlite,
                                 out.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out.path().c_str(), &db), SQLITE_OK);
  EXPECT_EQ(
      MetricQuery(db,
                  "SELECT typeId, sourceId, typeName, metricId, metricName, cuptiName, "
                  "unit FROM TARGET_INFO_GPU_METRICS ORDER BY metricId"),
      (std::vector<std::string>{"0|0|GPU 0 (NVIDIA H200)|1|SM active [%]|"
                                "sm__cycles_active.avg.pct_of_peak_sustained_elapsed|%",
                                "0|0|GPU 0 (NVIDIA H200)|2|Tensor pipe active [%]|"
                                "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed|%",
                                "0|0|GPU 0 (NVIDIA H200)|3|DRAM throughput [%]|"
                                "dramc__throughput.avg.pct_of_peak_sustained_elapsed|%"}));
  EXPECT_EQ(MetricQuery(db, "SELECT COUNT(*) FROM GPU_METRICS"), std::vector<std::string>{"210"});
  // The query of public nsys scripts: a metric's mean by name, timestamps
  // from the session start (the first kernel, 1000 ns).
  EXPECT_EQ(MetricQuery(db,
                        "SELECT m.timestamp, m.end, m.value FROM GPU_METRICS m JOIN "
                        "TARGET_INFO_GPU_METRICS i ON i.typeId = m.typeId AND i.metricId = "
                        "m.metricId WHERE i.metricName LIKE 'DRAM throughput%' AND m.typeId & "
                        "255 = 0 ORDER BY m.timestamp LIMIT 2"),
            (std::vector<std::string>{"0|100|85.0", "100|200|85.0"}));
  EXPECT_EQ(MetricQuery(db,
                        "SELECT AVG(m.value) FROM GPU_METRICS m JOIN TARGET_INFO_GPU_METRICS i "
                        "USING (typeId, metricId) WHERE i.metricName LIKE 'SM active%' AND "
                        "m.timestamp >= 2000 AND m.timestamp < 3000"),
            std::vector<std::string>{"95.0"});
  sqlite3_close(db);

  // Without metric rows: no such tables.
  model::Trace plain = ::tracesmith::testing::GpuMetricTrace({.descriptions = false});
  plain.Rows<model::GpuMetricSample>().clear();
  testing::TempPath out2(".sqlite");
  ASSERT_TRUE(exporter::ExportTrace(plain, ExportFormat::kSqlite, out2.path()).ok());
  ASSERT_EQ(sqlite3_open(out2.path().c_str(), &db), SQLITE_OK);
  EXPECT_EQ(MetricQuery(db, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '%GPU_METRICS'"),
            std::vector<std::string>{"0"});
  sqlite3_close(db);
}

// A sample CUPTI evaluated to NaN (seen on the H200) writes no row: the export
// of such a capture failed on GPU_METRICS.value's NOT NULL before.
TEST(GpuMetricExport, SqliteLeavesOutSamplesWithoutAValue) {
  model::Trace t = ::tracesmith::testing::GpuMetricTrace();
  const size_t rows = t.Rows<model::GpuMetricSample>().size();
  ASSERT_GE(rows, 2u);
  t.Rows<model::GpuMetricSample>()[0].value = std::nan("");
  t.Rows<model::GpuMetricSample>()[1].value = std::numeric_limits<double>::infinity();
  testing::TempPath out(".sqlite");
  auto s = exporter::ExportTrace(t, ExportFormat::kSqlite, out.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out.path().c_str(), &db), SQLITE_OK);
  EXPECT_EQ(MetricQuery(db, "SELECT COUNT(*) FROM GPU_METRICS"),
            std::vector<std::string>{std::to_string(rows - 2)});
  sqlite3_close(db);
}
}  // namespace
}  // namespace tracesmith
