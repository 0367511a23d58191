// GPU metric rows (kinds 16 gpumetric and 76 gpumetricdesc, profile
// --gpu-metrics) through the writer and reader, and files written before
// they existed.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string_view>

#include "earlier_example.h"
#include "testing/gpu_metric_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::format {
namespace {

TEST(GpuMetricRows, SamplesAndDescriptionsRoundTrip) {
  model::Trace in = ::tracesmith::testing::GpuMetricTrace();
  // Values CUPTI may give: not a number (a metric it could not evaluate), huge rates.
  in.Rows<model::GpuMetricSample>()[0].value = std::numeric_limits<double>::quiet_NaN();
  in.Rows<model::GpuMetricSample>()[1].value = 3.5e12;
  for (uint32_t rows : {7u, 1u << 16}) {
    ::tracesmith::testing::TempPath tmp;
    ASSERT_TRUE(WriteTraceFile(in, tmp.path(), {.zstd_level = 3, .rows_per_chunk = rows}).ok());
    ReadReport report;
    auto out = ReadTraceFile(tmp.path(), &report);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(report.clean()) << report.Describe();
    const auto& a = in.Rows<model::GpuMetricSample>();
    const auto& b = out->Rows<model::GpuMetricSample>();
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), 70u * 3);
    EXPECT_TRUE(std::isnan(b[0].value));
    for (size_t i = 1; i < a.size(); ++i) {
      EXPECT_EQ(a[i].start_ns, b[i].start_ns) << i;
      EXPECT_EQ(a[i].end_ns, b[i].end_ns) << i;
      EXPECT_EQ(a[i].value, b[i].value) << i;
      EXPECT_EQ(a[i].metric_id, b[i].metric_id) << i;
      EXPECT_EQ(a[i].device_id, b[i].device_id) << i;
      EXPECT_EQ(a[i].pid, b[i].pid) << i;
    }
    ASSERT_EQ(out->Rows<model::GpuMetric>().size(), 3u);
    const model::GpuMetric& m = out->Rows<model::GpuMetric>()[1];
    EXPECT_EQ(m.metric_id, 2u);
    EXPECT_EQ(out->strings.Get(m.label_id), "Tensor pipe active");
    EXPECT_EQ(out->strings.Get(m.unit_id), "%");
    EXPECT_EQ(
        model::EventName(*out, b[1]),
        "Tensor pipe active (sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed)");
  }
}

// The kinds as persisted: 75 is sasscount's (profile --sass-counts), the descriptions took 76.
TEST(GpuMetricRows, KindsAreSixteenAndSeventySix) {
  EXPECT_EQ(int(model::TableKind::kGpuMetricSample), 16);
  EXPECT_EQ(int(model::TableKind::kGpuMetric), 76);
  EXPECT_EQ(model::RecordTraits<model::GpuMetric>::kLabel, std::string_view("gpumetricdesc"));
  EXPECT_EQ(int(model::TableKind::kSassCount), 75);
}

TEST(GpuMetricRows, SampleWithoutDescriptionIsNamedByItsId) {
  model::Trace t = ::tracesmith::testing::GpuMetricTrace({.descriptions = false});
  EXPECT_EQ(model::EventName(t, t.Rows<model::GpuMetricSample>().at(2)), "GPU metric 3");
}

// A trace written before the kinds existed reads with none of them.
TEST(GpuMetricRows, EarlierTraceReadsWithoutThem) {
  const model::Trace trace = ReadEarlierExample();
  EXPECT_TRUE(trace.Rows<model::GpuMetricSample>().empty());
  EXPECT_TRUE(trace.Rows<model::GpuMetric>().empty());
}

}  // namespace
}  // namespace tracesmith::format
