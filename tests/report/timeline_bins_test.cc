// The timeline overview's bins (report/timeline_bins.h) against hand counts.
#include "tracesmith/report/timeline_bins.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "analysis/test_traces.h"
#include "testing/gpu_metric_trace.h"

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

// GPU metrics (testing/gpu_metric_trace.h: one phase per 1000 ns from 1000 on,
// samples of 100 ns) in the timeline's bins: per (device, metric) a row named
// with the label and unit, per bin the time-weighted mean and the lowest and
// highest sample overlapping it.
TEST(TimelineBinsTest, GpuMetricsAreTimeWeightedPerBin) {
  analysis::CompactTrace c;
  c.IngestAll(::tracesmith::testing::GpuMetricTrace());
  c.Finalize();
  ASSERT_EQ(c.window_begin(), 1000u);
  ASSERT_EQ(c.window_end(), 6000u);
  TimelineBins one = ComputeTimelineBins(c, 5);  // a bin per phase
  ASSERT_EQ(one.gpu_metrics.size(), 3u);
  EXPECT_EQ(one.gpu_metrics_omitted, 0u);
  const GpuMetricBins& sm = one.gpu_metrics[0];
  EXPECT_EQ(sm.name, "GPU 0 \u00b7 SM active (%)");
  EXPECT_EQ(sm.metric, "sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(sm.unit, "%");
  EXPECT_EQ(sm.pid, 100u);
  EXPECT_EQ(sm.device, 0u);
  EXPECT_EQ(sm.values, 50u);  // samples overlapping the window
  EXPECT_EQ(sm.mean, (std::vector<double>{90, 0, 95, 100, 90}));
  EXPECT_EQ(sm.lo, sm.mean);
  EXPECT_EQ(sm.hi, sm.mean);
  EXPECT_EQ(one.gpu_metrics[1].name, "GPU 0 \u00b7 Tensor pipe active (%)");
  EXPECT_EQ(one.gpu_metrics[2].name, "GPU 0 \u00b7 DRAM throughput (%)");
  EXPECT_EQ(one.gpu_metrics[2].mean, (std::vector<double>{85, 0, 20, 30, 5}));
  EXPECT_EQ(one.gpu_metrics[2].min, 0.0);
  EXPECT_EQ(one.gpu_metrics[2].max, 85.0);
  // Two bins of 2500 ns: [1000, 3500) holds copy, idle and half of gemm alone.
  TimelineBins two = ComputeTimelineBins(c, 2);
  const GpuMetricBins& sm2 = two.gpu_metrics[0];
  EXPECT_EQ(sm2.mean, (std::vector<double>{(90 * 1000 + 95 * 500) / 2500.0,
                                           (95 * 500 + 100 * 1000 + 90 * 1000) / 2500.0}));
  EXPECT_EQ(sm2.lo, (std::vector<double>{0, 90}));
  EXPECT_EQ(sm2.hi, (std::vector<double>{95, 100}));
  EXPECT_EQ(two.bins * (two.lanes.size() + 3 * two.gpu_metrics.size()), 2u * 11);
}

// A sample across a bin edge counts in both bins by its overlap; a bin no
// sample covers has no value (NaN); without GpuMetric rows, the metric's id;
// samples outside the window, or of no length, are left out (a metric with
// no other sample has no row).
TEST(TimelineBinsTest, GpuMetricSamplesSplitAtBinEdges) {
  analysis::testing::TraceBuilder b;
  b.Kernel("a", 0, 7, 100, 200);  // the window: [100, 200), 4 bins of 25
  model::Trace& t = b.trace();
  auto sample = [&](uint64_t from, uint64_t to, double v) {
    model::GpuMetricSample s{};
    s.start_ns = from;
    s.end_ns = to;
    s.value = v;
    s.metric_id = 4;
    s.pid = 100;  // the kernels' process
    t.Rows<model::GpuMetricSample>().push_back(s);
  };
  sample(50, 110, 1);                                     // before the window, 10 ns in bin 0
  sample(110, 135, 3);                                    // 15 ns in bin 0, 10 in bin 1
  sample(135, 150, 5);                                    // bin 1
  sample(200, 300, 99);                                   // after the window
  sample(150, 150, 7);                                    // of no length: nothing
  t.Rows<model::GpuMetricSample>().back().metric_id = 5;  // the only sample of metric 5
  analysis::CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  ASSERT_EQ(c.window_begin(), 100u);
  ASSERT_EQ(c.window_end(), 200u);
  TimelineBins bins = ComputeTimelineBins(c, 4);
  ASSERT_EQ(bins.gpu_metrics.size(), 1u);
  const GpuMetricBins& m = bins.gpu_metrics[0];
  EXPECT_EQ(m.name, "GPU 0 \u00b7 metric 4");
  EXPECT_EQ(m.unit, "");
  EXPECT_EQ(m.values, 3u);
  EXPECT_EQ(m.mean[0], (1 * 10 + 3 * 15) / 25.0);
  EXPECT_EQ(m.mean[1], (3 * 10 + 5 * 15) / 25.0);
  EXPECT_EQ(m.lo[0], 1.0);
  EXPECT_EQ(m.hi[0], 3.0);
  EXPECT_EQ(m.lo[1], 3.0);
  EXPECT_EQ(m.hi[1], 5.0);
  for (size_t k = 2; k < 4; ++k)
    EXPECT_TRUE(std::isnan(m.mean[k]) && std::isnan(m.lo[k]) && std::isnan(m.hi[k])) << k;
  EXPECT_EQ(m.min, 1.0);
  EXPECT_EQ(m.max, 5.0);
}

TEST(TimelineBinsTest, ManyGpuMetricsAreCappedAndShareTheBinBudget) {
  analysis::testing::TraceBuilder b;
  for (uint32_t s = 0; s < 1000; ++s) b.Kernel("k", 0, s, s, s + 10);
  model::Trace& t = b.trace();
  for (uint32_t device = 0; device < 10; ++device)
    for (uint32_t metric = 1; metric <= 3; ++metric) {
      model::GpuMetricSample s{};
      s.start_ns = 0;
      s.end_ns = 100;
      s.value = metric;
      s.device_id = device;
      s.pid = 100;
      s.metric_id = metric;
      t.Rows<model::GpuMetricSample>().push_back(s);
    }
  analysis::CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  TimelineBins bins = ComputeTimelineBins(c, 4000);
  EXPECT_EQ(bins.gpu_metrics.size(), kMaxTimelineGpuMetrics);
  EXPECT_EQ(bins.gpu_metrics_omitted, 30 - kMaxTimelineGpuMetrics);
  EXPECT_EQ(bins.gpu_metrics.back().name, "GPU 7 \u00b7 metric 3");
  EXPECT_EQ(bins.bins, kMaxBinValues / (1000 + 3 * kMaxTimelineGpuMetrics));
}

}  // namespace
}  // namespace tracesmith::report
