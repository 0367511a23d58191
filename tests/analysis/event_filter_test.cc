// Event selection and per-name statistics (analysis/event_filter.h), the
// library behind `tracesmith view` and `view --stats`.
#include "tracesmith/analysis/event_filter.h"

#include <gtest/gtest.h>

#include "test_traces.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::analysis {
namespace {

using testing::TraceBuilder;

// Kernels gemm (stream 7, dev 0) at 1000, relu (stream 7) at 3000, gemm
// (stream 9, dev 1) at 6000, and one memcpy at 2000; the trace starts at 1000.
model::Trace Sample() {
  TraceBuilder b;
  b.Kernel("gemm", 0, 7, 1000, 1500);
  b.Kernel("relu", 0, 7, 3000, 3100);
  b.Kernel("gemm", 1, 9, 6000, 6700);
  b.Memcpy(1, 4096, 0, 7, 2000, 2200);
  return b.trace();
}

std::vector<uint32_t> Rows(const std::vector<EventRef>& refs) {
  std::vector<uint32_t> out;
  for (const EventRef& r : refs) out.push_back(r.row);
  return out;
}

TEST(EventFilterTest, SelectsByKindNameStreamDeviceAndWindowInStartOrder) {
  model::Trace t = Sample();
  auto all = EventFilter::Make({});
  ASSERT_TRUE(all.ok());
  ASSERT_TRUE(all->Resolve(1000).ok());
  std::vector<EventRef> refs = SelectEvents(t, *all);
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[1].kind, model::TableKind::kMemcpy);  // 2000: between the kernels
  EXPECT_EQ(refs[3].start, 6000u);

  EventFilterSpec spec;
  spec.kinds = {"kernel"};
  spec.name_regex = "^ge";
  auto f = EventFilter::Make(spec);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->Resolve(1000).ok());
  EXPECT_EQ(Rows(SelectEvents(t, *f)), (std::vector<uint32_t>{0, 2}));

  spec.stream = 9;
  f = EventFilter::Make(spec);
  ASSERT_TRUE(f->Resolve(1000).ok());
  EXPECT_EQ(Rows(SelectEvents(t, *f)), (std::vector<uint32_t>{2}));

  // Window relative to the trace's start: 1.5us..3us after 1000 = [2500, 4000].
  EventFilterSpec window;
  window.from = "1.5us";
  window.to = "3us";
  f = EventFilter::Make(window);
  ASSERT_TRUE(f->Resolve(1000).ok());
  refs = SelectEvents(t, *f);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].start, 3000u);

  EventFilterSpec dev;
  dev.device = 1;
  f = EventFilter::Make(dev);
  ASSERT_TRUE(f->Resolve(1000).ok());
  EXPECT_EQ(Rows(SelectEvents(t, *f)), (std::vector<uint32_t>{2}));
}

TEST(EventFilterTest, BadInputIsNamed) {
  EventFilterSpec spec;
  spec.kinds = {"kernels"};
  auto f = EventFilter::Make(spec);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("unknown event kind 'kernels'"), std::string::npos);
  // The list offered names every event kind, the newest too (the record table's labels).
  EXPECT_NE(f.status().message().find("pcsample, timeout, gpumetric, appcounter, appevent, "
                                      "nvtxpayload"),
            std::string::npos)
      << f.status().message();
  spec.kinds = {"nvtxpayload"};
  EXPECT_TRUE(EventFilter::Make(spec).ok());
  spec.kinds.clear();
  spec.name_regex = "(";
  f = EventFilter::Make(spec);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("bad --name regex '('"), std::string::npos);
  spec.name_regex.clear();
  spec.from = "soon";
  f = EventFilter::Make(spec);
  ASSERT_TRUE(f.ok());
  Status st = f->Resolve(0);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'soon' is not a duration"), std::string::npos);
}

TEST(EventFilterTest, StatsStreamPerKindAndPerNameLargestTotalFirst) {
  ::tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(Sample(), path.path()).ok());
  auto reader = format::SbtReader::Open(path.path());
  ASSERT_TRUE(reader.ok());
  auto f = EventFilter::Make({});
  ASSERT_TRUE(f.ok());
  auto stats = StreamEventStats(**reader, *f);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->matched, 4u);
  EXPECT_EQ(stats->per_kind.at("kernel"), 3u);
  EXPECT_EQ(stats->per_kind.at("memcpy"), 1u);
  ASSERT_EQ(stats->per_name.size(), 3u);
  const NameStats& gemm = stats->per_name[0];
  EXPECT_EQ(gemm.kind, "kernel");
  EXPECT_EQ(gemm.name, "gemm");
  EXPECT_EQ(gemm.count, 2u);
  EXPECT_EQ(gemm.total_ns, 1200u);
  EXPECT_EQ(gemm.min_ns, 500u);
  EXPECT_EQ(gemm.max_ns, 700u);
  EXPECT_EQ(gemm.mean_ns(), 600u);
  EXPECT_EQ(stats->per_name[1].total_ns, 200u);  // the memcpy
  EXPECT_EQ(stats->per_name[2].name, "relu");

  // With a window the first pass finds the start: kernels from 1.5 us on.
  auto r2 = format::SbtReader::Open(path.path());
  ASSERT_TRUE(r2.ok());
  EventFilterSpec spec;
  spec.kinds = {"kernel"};
  spec.from = "1.5us";
  f = EventFilter::Make(spec);
  ASSERT_TRUE(f.ok());
  stats = StreamEventStats(**r2, *f);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->matched, 2u);
  EXPECT_EQ(stats->per_name[0].name, "gemm");
  EXPECT_EQ(stats->per_name[0].count, 1u);
}

}  // namespace
}  // namespace tracesmith::analysis
