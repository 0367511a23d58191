#include <gtest/gtest.h>

#include "testing/random_records.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {
namespace {

using model::ForEachRecordType;
using model::RecordTraits;
using model::Trace;

void ExpectSameTrace(const Trace& a, const Trace& b) {
  ForEachRecordType([&]<typename T>() {
    const auto& ra = a.Rows<T>();
    const auto& rb = b.Rows<T>();
    ASSERT_EQ(ra.size(), rb.size()) << RecordTraits<T>::kLabel;
    for (size_t i = 0; i < ra.size(); ++i) {
      for (size_t f = 0; f < RecordTraits<T>::kNumFields; ++f) {
        const auto& fd = RecordTraits<T>::kAllFields[f];
        ASSERT_EQ(model::LoadField(&ra[i], fd), model::LoadField(&rb[i], fd))
            << RecordTraits<T>::kLabel << " row " << i << " field " << fd.name;
      }
    }
  });
  ASSERT_EQ(a.strings.size(), b.strings.size());
  for (uint32_t i = 0; i < a.strings.size(); ++i) EXPECT_EQ(a.strings.Get(i), b.strings.Get(i));
}

struct Params {
  int zstd_level;
  uint32_t rows_per_chunk;
};

class RoundTripTest : public ::testing::TestWithParam<Params> {};

TEST_P(RoundTripTest, EveryFieldOfEveryKindSurvives) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    Trace in = testing::RandomTrace(seed, 300);
    testing::TempPath tmp;
    SbtWriterOptions opts;
    opts.zstd_level = GetParam().zstd_level;
    opts.rows_per_chunk = GetParam().rows_per_chunk;
    ASSERT_TRUE(WriteTraceFile(in, tmp.path(), opts).ok());
    ReadReport report;
    auto out = ReadTraceFile(tmp.path(), &report);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(report.clean()) << report.Describe();
    EXPECT_TRUE(report.indexed);
    EXPECT_EQ(report.valid_bytes, report.file_size);
    ExpectSameTrace(in, *out);
  }
}

INSTANTIATE_TEST_SUITE_P(Chunking, RoundTripTest,
                         ::testing::Values(Params{0, 1u << 16}, Params{3, 1u << 16}, Params{0, 7},
                                           Params{1, 64}));

TEST(RoundTrip, EmptyTrace) {
  testing::TempPath tmp;
  ASSERT_TRUE(WriteTraceFile(Trace{}, tmp.path()).ok());
  ReadReport report;
  auto out = ReadTraceFile(tmp.path(), &report);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->EventCount(), 0u);
  EXPECT_TRUE(report.indexed);
}

TEST(RoundTrip, StreamingWriterWithoutCloseIsReadableByScan) {
  testing::TempPath tmp;
  auto w = SbtWriter::Open(tmp.path(), {.zstd_level = 0, .rows_per_chunk = 10});
  ASSERT_TRUE(w.ok());
  uint32_t name = (*w)->InternString("my_kernel");
  for (uint32_t i = 0; i < 95; ++i)
    (*w)->Append(model::KernelEvent{
        .start_ns = 1000 + i * 10, .end_ns = 1005 + i * 10, .correlation_id = i, .name_id = name});
  // 9 chunks were written as the buffer filled; 5 rows are still buffered.
  // Read the file as a killed process would leave it (no Close).
  ReadReport report;
  auto out = ReadTraceFile(tmp.path(), &report);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(report.indexed);
  EXPECT_TRUE(report.clean()) << report.Describe();
  ASSERT_EQ(out->Rows<model::KernelEvent>().size(), 90u);
  EXPECT_EQ(out->strings.Get(out->Rows<model::KernelEvent>()[89].name_id), "my_kernel");
  ASSERT_TRUE((*w)->Close().ok());
  out = ReadTraceFile(tmp.path(), &report);
  EXPECT_EQ(out->Rows<model::KernelEvent>().size(), 95u);
  EXPECT_TRUE(report.indexed);
}

TEST(RoundTrip, RefusesToOverwriteWithoutPermission) {
  testing::TempPath tmp;
  ASSERT_TRUE(WriteStringToFile(tmp.path(), "x").ok());
  auto w = SbtWriter::Open(tmp.path(), {.overwrite = false});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("--force"), std::string::npos);
}

TEST(RoundTrip, IndexRecordsTimeRangesAndKinds) {
  Trace t;
  for (uint64_t i = 0; i < 100; ++i)
    t.Rows<model::ApiEvent>().push_back({.start_ns = 500 + i, .end_ns = 600 + i});
  testing::TempPath tmp;
  ASSERT_TRUE(WriteTraceFile(t, tmp.path(), {.rows_per_chunk = 40}).ok());
  auto r = SbtReader::Open(tmp.path());
  ASSERT_TRUE(r.ok());
  std::vector<ChunkIndexEntry> tables;
  for (const auto& c : (*r)->chunks())
    if (c.type == uint16_t(ChunkType::kTable)) tables.push_back(c);
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_EQ(tables[0].table_kind, uint16_t(model::TableKind::kApi));
  EXPECT_EQ(tables[0].rows, 40u);
  EXPECT_EQ(tables[0].min_ts, 500u);
  EXPECT_EQ(tables[0].max_ts, 639u);
  EXPECT_EQ(tables[2].rows, 20u);
}

}  // namespace
}  // namespace tracesmith::format

namespace tracesmith::format {
namespace {

TEST(Stream, VisitsEveryEventChunkWithMetadataAndStrings) {
  model::Trace in = testing::RandomTrace(9, 200);
  testing::TempPath tmp;
  ASSERT_TRUE(WriteTraceFile(in, tmp.path(), {.rows_per_chunk = 32}).ok());
  auto r = SbtReader::Open(tmp.path());
  ASSERT_TRUE(r.ok());
  model::Trace collected;
  size_t callbacks = 0;
  Status st = (*r)->Stream([&](const model::Trace& batch, model::TableKind kind) {
    ++callbacks;
    // Metadata written before the events is already there.
    EXPECT_EQ(batch.Rows<model::Device>().size(), in.Rows<model::Device>().size());
    EXPECT_EQ(batch.strings.size(), in.strings.size());
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (model::RecordTraits<T>::kIsEvent) {
        if (model::RecordTraits<T>::kKind == kind) {
          EXPECT_LE(batch.Rows<T>().size(), 32u);
          auto& dst = collected.Rows<T>();
          dst.insert(dst.end(), batch.Rows<T>().begin(), batch.Rows<T>().end());
        } else {
          EXPECT_TRUE(batch.Rows<T>().empty()) << "rows of other kinds must not linger";
        }
      }
    });
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  size_t event_kinds = 0;
  model::ForEachRecordType([&]<typename T>() { event_kinds += model::RecordTraits<T>::kIsEvent; });
  EXPECT_EQ(callbacks, event_kinds * ((200 + 31) / 32));
  model::ForEachRecordType([&]<typename T>() {
    if constexpr (model::RecordTraits<T>::kIsEvent) {
      EXPECT_TRUE(collected.Rows<T>() == in.Rows<T>()) << model::RecordTraits<T>::kLabel;
    }
  });
}

TEST(Stream, EndCallbackSeesMetadataWrittenAfterTheLastEvents) {
  testing::TempPath tmp;
  {
    auto w = SbtWriter::Open(tmp.path());
    ASSERT_TRUE(w.ok());
    model::ClockAnchor start;
    start.phase = model::kClockStart;
    (*w)->Append(start);
    model::KernelEvent k;
    k.start_ns = 10;
    k.end_ns = 20;
    (*w)->Append(k);
    ASSERT_TRUE((*w)->Flush().ok());
    model::ClockAnchor end;  // after the last event chunk, as a capture writes it
    end.phase = model::kClockEnd;
    (*w)->Append(end);
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto r = SbtReader::Open(tmp.path());
  ASSERT_TRUE(r.ok());
  size_t anchors_during = 0, anchors_at_end = 0, ends = 0;
  Status st = (*r)->Stream(
      [&](const model::Trace& batch, model::TableKind) {
        anchors_during = batch.Rows<model::ClockAnchor>().size();
        return OkStatus();
      },
      [&](const model::Trace& batch) {
        ++ends;
        anchors_at_end = batch.Rows<model::ClockAnchor>().size();
        return OkStatus();
      });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(anchors_during, 1u);
  EXPECT_EQ(anchors_at_end, 2u);
  EXPECT_EQ(ends, 1u);
}

TEST(Stream, CallbackErrorStopsTheRead) {
  model::Trace in = testing::RandomTrace(3, 100);
  testing::TempPath tmp;
  ASSERT_TRUE(WriteTraceFile(in, tmp.path(), {.rows_per_chunk = 10}).ok());
  auto r = SbtReader::Open(tmp.path());
  int calls = 0;
  Status st = (*r)->Stream([&](const model::Trace&, model::TableKind) {
    return ++calls == 3 ? Internal("stop here") : OkStatus();
  });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(st.message(), "stop here");
}

}  // namespace
}  // namespace tracesmith::format
