// include/tracesmith/app/app.h through a capture library (libtracesmith-app-fake.so,
// linked: found with dlsym(RTLD_DEFAULT) as the injection library is under
// `tracesmith profile`): every call recorded with its thread, exact values,
// ranges and instants with their arguments, nothing before the capture or
// after it.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "testing/temp_file.h"
#include "tracesmith/app/app.h"
#include "tracesmith/format/sbt_reader.h"

extern "C" int tracesmith_session_start(const char* options, char* error, size_t error_len);
extern "C" int tracesmith_session_stop(char* path, size_t path_len, char* error, size_t error_len);

namespace {

using namespace tracesmith;

model::Trace Capture(const std::function<void()>& body) {
  ::tracesmith::testing::TempPath tmp;
  char error[256] = "";
  std::string options = "TRACESMITH_OUTPUT=" + tmp.path() + "\n";
  EXPECT_EQ(tracesmith_session_start(options.c_str(), error, sizeof(error)), 0) << error;
  body();
  EXPECT_EQ(tracesmith_session_stop(nullptr, 0, error, sizeof(error)), 0) << error;
  auto trace = format::ReadTraceFile(tmp.path());
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  return trace.ok() ? std::move(*trace) : model::Trace{};
}

int64_t Stat(const model::Trace& t, std::string_view name) {
  for (const model::Stat& s : t.Rows<model::Stat>())
    if (t.strings.Get(s.name_id) == name) return s.value;
  return -1;
}

TEST(AppApi, ResolvesTheLinkedLibrary) {
  ASSERT_NE(ts_app_api(), nullptr);
  EXPECT_EQ(ts_app_api()->version, TRACESMITH_APP_API_VERSION);
  EXPECT_EQ(ts_app_capturing(), nullptr);  // nothing captures yet
  EXPECT_EQ(ts_app_range_begin(), 0u);
}

TEST(AppApi, CountersRangesAndInstantsWithTheirThreads) {
  const uint32_t loss = ts_app_intern("loss");
  const uint32_t eval = ts_app_intern("eval");
  ASSERT_NE(loss, 0u);
  EXPECT_EQ(ts_app_intern("loss"), loss);  // one id per name
  ts_app_counter(loss, 99.0);              // before the capture: not recorded
  uint32_t main_tid = uint32_t(syscall(SYS_gettid)), worker_tid = 0;
  model::Trace t = Capture([&] {
    for (int i = 0; i < 1000; ++i) ts_app_counter(loss, 1.0 / (i + 1));
    {
      TRACESMITH_RANGE("step");
      tracesmith::app::ScopedRange r(eval, ts_app_intern_args("{\"epoch\": 3}"));
      TRACESMITH_INSTANT("checkpoint");
    }
    std::thread worker([&] {
      worker_tid = uint32_t(syscall(SYS_gettid));
      for (int i = 0; i < 10; ++i) TRACESMITH_COUNTER("tokens/s", 1000 + i);
    });
    worker.join();
  });
  ts_app_counter(loss, 99.0);  // after it: not recorded
  const auto& counters = t.Rows<model::AppCounterEvent>();
  ASSERT_EQ(counters.size(), 1010u);
  std::map<std::string, std::vector<double>> values;
  for (const auto& c : counters) {
    values[std::string(t.strings.Get(c.name_id))].push_back(c.value);
    EXPECT_EQ(c.tid, t.strings.Get(c.name_id) == "loss" ? main_tid : worker_tid);
    EXPECT_EQ(c.pid, uint32_t(getpid()));
  }
  ASSERT_EQ(values["loss"].size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(values["loss"][i], 1.0 / (i + 1)) << i;
  ASSERT_EQ(values["tokens/s"].size(), 10u);
  EXPECT_EQ(values["tokens/s"][9], 1009.0);

  const auto& events = t.Rows<model::AppEvent>();
  ASSERT_EQ(events.size(), 3u);
  std::map<std::string, model::AppEvent> by_name;
  for (const auto& e : events) by_name[std::string(t.strings.Get(e.name_id))] = e;
  const model::AppEvent &step = by_name["step"], &ev = by_name["eval"], &cp = by_name["checkpoint"];
  EXPECT_EQ(step.kind, model::kAppRange);
  EXPECT_EQ(ev.kind, model::kAppRange);
  EXPECT_EQ(cp.kind, model::kAppInstant);
  EXPECT_EQ(t.strings.Get(ev.args_id), "{\"epoch\": 3}");
  EXPECT_EQ(step.args_id, 0u);
  EXPECT_LE(step.start_ns, ev.start_ns);  // eval inside step, the instant inside eval
  EXPECT_LE(ev.start_ns, cp.start_ns);
  EXPECT_EQ(cp.end_ns, cp.start_ns);
  EXPECT_LE(cp.start_ns, ev.end_ns);
  EXPECT_LE(ev.end_ns, step.end_ns);
  EXPECT_EQ(ev.tid, main_tid);
  EXPECT_EQ(Stat(t, "capture.app.counters"), 1010);
  EXPECT_EQ(Stat(t, "capture.app.ranges"), 2);
  EXPECT_EQ(Stat(t, "capture.app.instants"), 1);
  EXPECT_EQ(Stat(t, "capture.app.ring_overflows"), 0);
}

// Bad input: NaN and infinite values rejected and counted, a huge name cut,
// a call with a name that could not be kept counted, not recorded.
TEST(AppApi, BadInputIsBoundedAndCounted) {
  std::string huge(100000, 'x');
  const uint32_t big = ts_app_intern(huge.c_str());
  const uint32_t loss = ts_app_intern("loss");
  model::Trace t = Capture([&] {
    ts_app_counter(loss, std::nan(""));
    ts_app_counter(loss, INFINITY);
    ts_app_counter(loss, 2.5);
    ts_app_counter(big, 1.0);
    ts_app_counter(0, 1.0);                                                    // no name
    ts_app_instant(loss, ts_app_intern_args(std::string(5000, '{').c_str()));  // args too long
  });
  const auto& counters = t.Rows<model::AppCounterEvent>();
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[0].value, 2.5);
  EXPECT_EQ(t.strings.Get(counters[1].name_id), std::string(256, 'x'));
  ASSERT_EQ(t.Rows<model::AppEvent>().size(), 1u);
  EXPECT_EQ(t.Rows<model::AppEvent>()[0].args_id, 0u);
  EXPECT_EQ(Stat(t, "capture.app.nan_rejected"), 2);
  EXPECT_EQ(Stat(t, "capture.app.names_dropped"), 1);
  EXPECT_EQ(Stat(t, "capture.app.args_dropped"), 1);
}

}  // namespace
