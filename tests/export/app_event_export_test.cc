// The program's own events (testing/app_event_trace.h) in the exports:
// Perfetto counter tracks under the process, ranges and instants on their
// thread with their arguments; Kineto JSON as torch.profiler writes counters
// ("C") and user_annotation ranges, argument texts as objects (or quoted when
// they are not JSON objects).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "export/perfetto_checker.h"
#include "testing/app_event_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"

namespace tracesmith {
namespace {

using exporter::ExportFormat;
using ::tracesmith::testing::kAppSteps;

std::string Export(const model::Trace& t, ExportFormat f, const char* ext) {
  testing::TempPath out(ext);
  auto s = exporter::ExportTrace(t, f, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  auto bytes = ReadFileToString(out.path());
  return bytes.ok() ? *bytes : "";
}

TEST(AppEventExport, PerfettoCountersUnderTheProcessSlicesOnTheThread) {
  const testing::PerfettoCheck c = testing::CheckPerfettoTrace(
      Export(::tracesmith::testing::AppEventTrace(), ExportFormat::kPerfetto, ".pftrace"));
  ASSERT_TRUE(c.ok()) << c.Summary();
  ASSERT_TRUE(c.counter_values.count("Counter: tokens/s")) << c.Summary();
  const std::vector<double>& v = c.counter_values.at("Counter: tokens/s");
  ASSERT_EQ(v.size(), size_t(kAppSteps));
  EXPECT_EQ(v[0], ::tracesmith::testing::AppTokensPerSecond(1));
  EXPECT_EQ(v[19], ::tracesmith::testing::AppTokensPerSecond(20));
  EXPECT_EQ(c.counter_values.at("Counter: loss").size(), size_t(2 * kAppSteps));
  for (const auto& [uuid, name] : c.track_names)
    if (name.starts_with("Counter: ")) {
      ASSERT_TRUE(c.track_parents.count(uuid));
      EXPECT_TRUE(c.process_pids.count(c.track_parents.at(uuid))) << name << " not under a process";
    }
  size_t evals = 0, steps = 0;
  std::set<uint64_t> tracks;  // the thread's: every range of the program is on it
  for (const testing::PerfettoSlice& s : c.slices) {
    if (s.name == "eval") {
      ++evals;
      EXPECT_EQ(s.args.at("args"), "{\"step\": " + std::to_string(evals) + "}");
      EXPECT_EQ(s.depth, 1);  // inside its step
      tracks.insert(s.track);
    }
    if (s.name.starts_with("step ")) {
      ++steps;
      tracks.insert(s.track);
    }
  }
  EXPECT_EQ(tracks.size(), 1u);
  EXPECT_EQ(evals, size_t(kAppSteps));
  EXPECT_EQ(steps, size_t(kAppSteps));
  EXPECT_GE(c.instants, uint64_t(kAppSteps));
}

TEST(AppEventExport, KinetoCountersAndUserAnnotations) {
  const nlohmann::json j = nlohmann::json::parse(
      Export(::tracesmith::testing::AppEventTrace(), ExportFormat::kJson, ".json"));
  size_t counters = 0, evals = 0, instants = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string name = e.value("name", "");
    if (e.value("ph", "") == "C" && name == "tokens/s") {
      ++counters;
      EXPECT_EQ(e.at("args").at("tokens/s").get<double>(),
                ::tracesmith::testing::AppTokensPerSecond(int(counters)));
      EXPECT_EQ(e.at("tid"), ::tracesmith::testing::kAppTid);
    }
    if (e.value("cat", "") == "user_annotation" && name == "eval") {
      ++evals;
      EXPECT_EQ(e.at("ph"), "X");
      EXPECT_EQ(e.at("args").at("step"), int(evals));
    }
    if (e.value("ph", "") == "i" && name == "checkpoint") {
      if (++instants == 1) {
        EXPECT_EQ(e.at("args").at("args"), "not json");
      }
      EXPECT_EQ(e.at("pid"), ::tracesmith::testing::kAppPid);
    }
  }
  EXPECT_EQ(counters, size_t(kAppSteps));
  EXPECT_EQ(evals, size_t(kAppSteps));
  EXPECT_EQ(instants, size_t(kAppSteps));
}

// SQLite: the ranges and instants in NVTX_EVENTS (push/pop ranges, marks) on their thread.
TEST(AppEventExport, SqliteNvtxEvents) {
  testing::TempPath out(".sqlite");
  auto s = exporter::ExportTrace(::tracesmith::testing::AppEventTrace(), ExportFormat::kSqlite,
                                 out.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out.path().c_str(), &db), SQLITE_OK);
  auto count = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    int64_t n = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
  };
  EXPECT_EQ(count("SELECT COUNT(*) FROM NVTX_EVENTS JOIN StringIds ON textId = id WHERE value = "
                  "'eval' AND eventType = 59 AND end - start = 10000"),
            kAppSteps);
  EXPECT_EQ(count("SELECT COUNT(*) FROM NVTX_EVENTS JOIN StringIds ON textId = id WHERE value = "
                  "'checkpoint' AND eventType = 34 AND end IS NULL"),
            kAppSteps);
  sqlite3_close(db);
}

// SQLite: the counters in TRACESMITH_APP_COUNTERS, a row per sample with its
// thread (globalTid) and name (StringIds); a NaN sample has no row.
TEST(AppEventExport, SqliteAppCounters) {
  model::Trace t = ::tracesmith::testing::AppEventTrace();
  model::AppCounterEvent nan = t.Rows<model::AppCounterEvent>().front();
  nan.value = std::nan("");
  t.Rows<model::AppCounterEvent>().push_back(nan);
  testing::TempPath out(".sqlite");
  auto s = exporter::ExportTrace(t, ExportFormat::kSqlite, out.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out.path().c_str(), &db), SQLITE_OK);
  auto number = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    double v = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_double(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
  };
  EXPECT_EQ(number("SELECT COUNT(*) FROM TRACESMITH_APP_COUNTERS"), 4 * kAppSteps);
  EXPECT_EQ(number("SELECT COUNT(*) FROM TRACESMITH_APP_COUNTERS c JOIN StringIds s ON nameId = "
                   "s.id WHERE s.value = 'loss'"),
            2 * kAppSteps);
  // tokens/s of step 1, at its end less 5 us, from the session start (the trace's first event)
  EXPECT_EQ(number("SELECT c.value FROM TRACESMITH_APP_COUNTERS c JOIN StringIds s ON nameId = "
                   "s.id WHERE s.value = 'tokens/s' ORDER BY timestamp LIMIT 1"),
            ::tracesmith::testing::AppTokensPerSecond(1));
  EXPECT_EQ(number("SELECT MIN(timestamp) FROM TRACESMITH_APP_COUNTERS c JOIN StringIds s ON "
                   "nameId = s.id WHERE s.value = 'tokens/s'"),
            400'000 - 5'000);
  const std::string worker = "SELECT COUNT(*) FROM TRACESMITH_APP_COUNTERS WHERE globalTid = " +
                             std::to_string((int64_t{::tracesmith::testing::kAppPid} << 24) +
                                            ::tracesmith::testing::kAppWorkerTid);
  EXPECT_EQ(number(worker.c_str()), kAppSteps);
  sqlite3_close(db);
}

}  // namespace
}  // namespace tracesmith
