// AppEvents (include/tracesmith/capture/app_events.h): the library side of the program's own
// events, without a GPU: ids, caps, rejection of bad values, recording only
// between Begin and End, many threads at once, the rows AppEventWriter writes.
#include "tracesmith/capture/app_events.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace tracesmith::capture {
namespace {

std::atomic<uint64_t> g_now{1000};
uint64_t FakeClock() { return g_now.fetch_add(10); }

TEST(AppEvents, InternKeepsOneIdPerTextAndCutsLongNames) {
  AppEvents& a = AppEvents::Get();
  const uint32_t id = a.Intern("loss", 4, false);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(a.Intern("loss", 4, false), id);
  EXPECT_NE(a.Intern("loss", 4, true), id);  // an argument text is another id
  EXPECT_EQ(a.Text(id), "loss");
  // Cut at a character boundary: 255 'a' then a 2-byte character at 255..256.
  std::string name(255, 'a');
  name += "\xc3\xa9";
  const uint32_t cut = a.Intern(name.data(), name.size(), false);
  EXPECT_EQ(a.Text(cut), std::string(255, 'a'));
  EXPECT_EQ(a.Intern(nullptr, 0, false), 0u);
}

TEST(AppEvents, RecordsOnlyWhileCapturingFromManyThreads) {
  AppEvents& a = AppEvents::Get();
  const uint32_t name = a.Intern("n", 1, false);
  a.Counter(name, 1.0);  // not capturing: nothing
  AppEventWriter writer(7);
  a.Begin(&FakeClock);
  std::vector<std::thread> threads;
  std::atomic<bool> done{false};
  std::thread collector([&] {
    while (!done) writer.Collect();
  });
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) a.Counter(name, t * 100000.0 + i);  // < a ring
      const uint64_t start = a.Now();
      a.Range(name, 0, start);
      a.Instant(name, 0);
    });
  for (auto& t : threads) t.join();
  a.End();
  done = true;
  collector.join();
  writer.Collect();
  a.Counter(name, 5.0);  // after End: nothing
  const AppEventStats s = writer.Stats();
  EXPECT_EQ(s.ring_overflows, 0u);
  // Rows through a real writer: counts per kind.
  std::string path = ::testing::TempDir() + "/app_events_test.sbt";
  auto sbt = format::SbtWriter::Open(path);
  ASSERT_TRUE(sbt.ok());
  writer.Write(**sbt);
  ASSERT_TRUE((*sbt)->Close().ok());
  EXPECT_EQ(writer.Stats().counters, 40000u);
  EXPECT_EQ(writer.Stats().ranges, 4u);
  EXPECT_EQ(writer.Stats().instants, 4u);
}

TEST(AppEvents, NanAndInfinityRejectedAndCounted) {
  AppEvents& a = AppEvents::Get();
  AppEventWriter writer(1);
  a.Begin(&FakeClock);
  a.Counter(a.Intern("x", 1, false), std::nan(""));
  a.Counter(a.Intern("x", 1, false), -INFINITY);
  a.End();
  writer.Collect();
  EXPECT_EQ(writer.Stats().nan_rejected, 2u);
}

// The capture range (--capture-range, --delay, --duration): the recorder
// switches the calls on and off with CUPTI's activities (SetOn). Outside the
// range nothing is recorded; a range is kept only when it starts after the
// last switch on and ends before the switch off; after End SetOn does nothing.
TEST(AppEvents, RecordsOnlyInsideTheCaptureRange) {
  AppEvents& a = AppEvents::Get();
  const uint32_t name = a.Intern("gated", 5, false);
  AppEventWriter writer(3);
  a.Begin(&FakeClock, /*on=*/false);
  EXPECT_EQ(*a.capturing_flag(), 0);
  a.Counter(name, 1.0);  // before the range: not recorded
  a.Instant(name, 0);
  EXPECT_EQ(a.Now(), 0u);
  a.SetOn(true);
  EXPECT_NE(*a.capturing_flag(), 0);
  a.Counter(name, 2.0);  // inside: recorded
  const uint64_t inside = a.Now();
  a.Range(name, 0, inside);            // inside to inside: recorded
  const uint64_t straddles = a.Now();  // ends after the switch off: not recorded
  a.SetOn(false);
  a.Range(name, 0, straddles);
  a.Counter(name, 3.0);
  a.SetOn(true);                // a second range of the capture
  a.Range(name, 0, straddles);  // began in the first one, before this switch on: not kept
  a.Instant(name, 0);
  a.End();
  a.SetOn(true);  // after End: stays off
  EXPECT_EQ(*a.capturing_flag(), 0);
  a.Counter(name, 4.0);
  writer.Collect();
  std::string path = ::testing::TempDir() + "/app_events_range_test.sbt";
  auto sbt = format::SbtWriter::Open(path);
  ASSERT_TRUE(sbt.ok());
  writer.Write(**sbt);
  ASSERT_TRUE((*sbt)->Close().ok());
  EXPECT_EQ(writer.Stats().counters, 1u);
  EXPECT_EQ(writer.Stats().ranges, 1u);
  EXPECT_EQ(writer.Stats().instants, 1u);
}

// Past kMaxAppNames distinct names a new name gets 0 and its calls are
// counted as dropped (runs last: it fills the process's name table).
TEST(AppEvents, ZZDistinctNamesAreCapped) {
  AppEvents& a = AppEvents::Get();
  AppEventWriter writer(1);
  uint32_t zeros = 0;
  for (uint32_t i = 0; i < kMaxAppNames + 50; ++i) {
    std::string n = "name " + std::to_string(i);
    zeros += a.Intern(n.data(), n.size(), false) == 0;
  }
  EXPECT_GE(zeros, 50u);
  EXPECT_LE(zeros, 60u);  // the names the tests above made count against the cap
  a.Begin(&FakeClock);
  a.Counter(0, 1.0);
  a.End();
  writer.Collect();
  EXPECT_EQ(writer.Stats().names_dropped, zeros + 1u);
}

}  // namespace
}  // namespace tracesmith::capture
