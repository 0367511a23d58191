// The timeline overview's bins (report/timeline_bins.h) against hand counts.
#include "tracesmith/report/timeline_bins.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tracesmith::report
