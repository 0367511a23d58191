// The timeline overview's bins (report/timeline_bins.h) against hand counts.
#include "tracesmith/report/timeline_bins.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "analysis/test_traces.h"

namespace tracesmith::report {
namespace {

TEST(TimelineBinsTest, BusyFractionPerBinCountsOverlapOnce) {
  analysis::testing::TraceBuilder b;
  b.Kernel("a", 0, 7, 0, 30);    // bins 0 (25) and 1 (5)
  b.Kernel("b", 0, 7, 20, 40);   // overlaps a: adds 30..40 only
  b.Kernel("c", 0, 7, 75, 100);  // bin 3, whole
  b.Kernel("d", 1, 3, 50, 51);
  analysis::CompactTrace c;
  c.IngestAll(b.trace());
  c.Finalize();
  ASSERT_EQ(c.window_begin(), 0u);
  ASSERT_EQ(c.window_end(), 100u);
  TimelineBins bins = ComputeTimelineBins(c, 4);
  ASSERT_EQ(bins.bins, 4u);
  ASSERT_EQ(bins.lanes.size(), 2u);
  const LaneBins& l = bins.lanes[0];
  EXPECT_EQ(l.group, "GPU 0");
  EXPECT_EQ(l.name, "stream 7");
  EXPECT_EQ(l.busy_ns, 65u);
  EXPECT_EQ(l.ops, 3u);
  EXPECT_EQ(l.busy_permille, (std::vector<uint16_t>{1000, 600, 0, 1000}));
  EXPECT_EQ(bins.lanes[1].busy_permille, (std::vector<uint16_t>{0, 0, 40, 0}));
}

TEST(TimelineBinsTest, ManyLanesGetFewerBins) {
  analysis::testing::TraceBuilder b;
  for (uint32_t s = 0; s < 2000; ++s) b.Kernel("k", 0, s, s, s + 10);
  analysis::CompactTrace c;
  c.IngestAll(b.trace());
  c.Finalize();
  TimelineBins bins = ComputeTimelineBins(c, 4000);
  EXPECT_EQ(bins.bins, kMaxBinValues / 2000);
}

// The program's counters in the timeline's bins: per bin the lowest and
// highest value held in it (the value from before the bin and the samples
// inside), nothing before the first sample, a sample before the window held
// into it, samples after the window ignored; by name.
TEST(TimelineBinsTest, ProgramCountersHoldTheirValueAcrossBins) {
  analysis::testing::TraceBuilder b;
  b.Kernel("a", 0, 7, 100, 200);  // the window: [100, 200), 4 bins of 25
  model::Trace& t = b.trace();
  auto counter = [&](const char* name, uint64_t ts, double v) {
    model::AppCounterEvent c;
    c.ts_ns = ts;
    c.value = v;
    c.pid = 1;
    c.tid = 2;
    c.name_id = t.strings.Intern(name);
    t.Rows<model::AppCounterEvent>().push_back(c);
  };
  counter("loss", 130, 4.0);  // bin 1
  counter("loss", 140, 2.0);  // bin 1
  counter("loss", 180, 3.0);  // bin 3
  counter("loss", 250, 9.0);  // after the window
  counter("lr", 50, 0.5);     // before the window: held into it
  counter("lr", 160, 0.25);   // bin 2
  counter("late", 300, 1.0);  // only after the window: not drawn
  analysis::CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  ASSERT_EQ(c.window_begin(), 100u);
  ASSERT_EQ(c.window_end(), 200u);
  TimelineBins bins = ComputeTimelineBins(c, 4);
  ASSERT_EQ(bins.bins, 4u);
  ASSERT_EQ(bins.counters.size(), 2u);
  const CounterBins& loss = bins.counters[0];
  EXPECT_EQ(loss.name, "loss");
  EXPECT_EQ(loss.pid, 1u);
  EXPECT_EQ(loss.values, 3u);
  EXPECT_TRUE(std::isnan(loss.lo[0]) && std::isnan(loss.hi[0]));
  EXPECT_EQ(loss.lo[1], 2.0);
  EXPECT_EQ(loss.hi[1], 4.0);
  EXPECT_EQ(loss.lo[2], 2.0);  // held
  EXPECT_EQ(loss.hi[2], 2.0);
  EXPECT_EQ(loss.lo[3], 2.0);  // held, then 3
  EXPECT_EQ(loss.hi[3], 3.0);
  EXPECT_EQ(loss.min, 2.0);
  EXPECT_EQ(loss.max, 4.0);
  const CounterBins& lr = bins.counters[1];
  EXPECT_EQ(lr.name, "lr");
  EXPECT_EQ(lr.values, 1u);
  EXPECT_EQ(lr.lo, (std::vector<double>{0.5, 0.5, 0.25, 0.25}));
  EXPECT_EQ(lr.hi, (std::vector<double>{0.5, 0.5, 0.5, 0.25}));
  EXPECT_EQ(bins.counters_omitted, 0u);
}

TEST(TimelineBinsTest, ManyProgramCountersAreCappedAndShareTheBinBudget) {
  analysis::testing::TraceBuilder b;
  for (uint32_t s = 0; s < 1000; ++s) b.Kernel("k", 0, s, s, s + 10);
  model::Trace& t = b.trace();
  for (int i = 0; i < 20; ++i) {
    model::AppCounterEvent c;
    c.ts_ns = 5;
    c.value = i;
    c.pid = 1;
    c.name_id = t.strings.Intern("counter " + std::to_string(100 + i));
    t.Rows<model::AppCounterEvent>().push_back(c);
  }
  analysis::CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  TimelineBins bins = ComputeTimelineBins(c, 4000);
  EXPECT_EQ(bins.counters.size(), kMaxTimelineCounters);
  EXPECT_EQ(bins.counters_omitted, 20 - kMaxTimelineCounters);
  EXPECT_EQ(bins.counters.front().name, "counter 100");
  EXPECT_EQ(bins.bins, kMaxBinValues / (1000 + 2 * kMaxTimelineCounters));
}

}  // namespace
}  // namespace tracesmith::report
