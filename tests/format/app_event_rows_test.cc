// The program's own rows (kinds 17 appcounter and 18 appevent) through the
// writer and reader, and a trace written before they existed.
#include <gtest/gtest.h>

#include "earlier_example.h"
#include "testing/app_event_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::format {
namespace {

TEST(AppEventRows, CountersRangesAndInstantsRoundTrip) {
  const model::Trace in = ::tracesmith::testing::AppEventTrace();
  for (uint32_t rows : {7u, 1u << 16}) {
    ::tracesmith::testing::TempPath tmp;
    ASSERT_TRUE(WriteTraceFile(in, tmp.path(), {.zstd_level = 3, .rows_per_chunk = rows}).ok());
    ReadReport report;
    auto out = ReadTraceFile(tmp.path(), &report);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(report.clean()) << report.Describe();
    const auto& a = in.Rows<model::AppCounterEvent>();
    const auto& b = out->Rows<model::AppCounterEvent>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].ts_ns, b[i].ts_ns);
      EXPECT_EQ(a[i].value, b[i].value);
      EXPECT_EQ(a[i].tid, b[i].tid);
      EXPECT_EQ(model::EventName(in, a[i]), model::EventName(*out, b[i]));
    }
    const auto& ea = in.Rows<model::AppEvent>();
    const auto& eb = out->Rows<model::AppEvent>();
    ASSERT_EQ(ea.size(), eb.size());
    for (size_t i = 0; i < ea.size(); ++i) {
      EXPECT_EQ(ea[i].start_ns, eb[i].start_ns);
      EXPECT_EQ(ea[i].end_ns, eb[i].end_ns);
      EXPECT_EQ(ea[i].kind, eb[i].kind);
      EXPECT_EQ(in.strings.Get(ea[i].args_id), out->strings.Get(eb[i].args_id));
      EXPECT_EQ(model::EventName(in, ea[i]), model::EventName(*out, eb[i]));
    }
  }
}

TEST(AppEventRows, EarlierTraceReadsWithoutThem) {
  const model::Trace trace = ReadEarlierExample();
  EXPECT_TRUE(trace.Rows<model::AppCounterEvent>().empty());
  EXPECT_TRUE(trace.Rows<model::AppEvent>().empty());
}

}  // namespace
}  // namespace tracesmith::format
