// One record list (issue #38): a record type added in one place
// (dummy_record.h, through TS_TEST_EXTRA_RECORDS_HEADER, see CMakeLists.txt)
// goes through everything the lists made from model/records.h's table drive:
// the capture's RowSink into an SbtWriter, the SbtReader (whole and
// streamed), the export's TimeOrderer and an exporter's EventSink (CSV).
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "export/sinks.h"
#include "export/time_orderer.h"
#include "testing/random_records.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/capture/row_sink.h"
#include "tracesmith/format/sbt.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

#ifndef TS_TEST_EXTRA_RECORDS_HEADER
#error "record_list_test is built with TS_TEST_EXTRA_RECORDS_HEADER (tests/format/CMakeLists.txt)"
#endif

namespace tracesmith {
namespace {

using model::DummyEvent;
using model::ForEachRecordType;
using model::KernelEvent;
using model::RecordTraits;
using model::Trace;

template <typename T, typename... U>
constexpr bool Contains(model::TypeList<U...>) {
  return (std::is_same_v<T, U> || ...);
}

// The lists made from the table have the type; the kind is the one the
// row gives, an event kind.
static_assert(Contains<DummyEvent>(model::RecordTypes{}));
static_assert(Contains<DummyEvent>(model::EventTypes{}));
static_assert(static_cast<uint16_t>(model::TableKind::kDummy) == 63);
static_assert(RecordTraits<DummyEvent>::kIsEvent);
static_assert(model::kMaxEventTableKind == 63);

void ExpectSameTrace(const Trace& a, const Trace& b) {
  ForEachRecordType([&]<typename T>() {
    const auto& ra = a.Rows<T>();
    const auto& rb = b.Rows<T>();
    ASSERT_EQ(ra.size(), rb.size()) << RecordTraits<T>::kLabel;
    for (size_t i = 0; i < ra.size(); ++i)
      ASSERT_TRUE(ra[i] == rb[i]) << RecordTraits<T>::kLabel << " row " << i;
  });
  ASSERT_EQ(a.strings.size(), b.strings.size());
  for (uint32_t i = 0; i < a.strings.size(); ++i) EXPECT_EQ(a.strings.Get(i), b.strings.Get(i));
}

TEST(RecordList, DummyIsTheLastEventKind) {
  EXPECT_STREQ(model::TableKindLabel(model::TableKind::kDummy), "dummy");
  EXPECT_TRUE(model::IsKnownTableKind(63));
  std::vector<std::string> labels;
  std::vector<bool> events;
  ForEachRecordType([&]<typename T>() {
    labels.push_back(RecordTraits<T>::kLabel);
    events.push_back(RecordTraits<T>::kIsEvent);
  });
  // After the real events (the hook is the events' last row), before the metadata.
  const auto at = std::find(labels.begin(), labels.end(), "dummy") - labels.begin();
  ASSERT_LT(at + 1, static_cast<std::ptrdiff_t>(labels.size()));
  EXPECT_EQ(labels[at - 1], "nvtxpayload");
  EXPECT_TRUE(events[at]);
  EXPECT_FALSE(events[at + 1]);
}

// Every field of every kind, the dummy's too, at several chunkings.
TEST(RecordList, RandomTraceWithTheDummyRoundTrips) {
  for (uint32_t rows_per_chunk : {7u, 1u << 16}) {
    Trace in = testing::RandomTrace(3, 300);
    ASSERT_EQ(in.Rows<DummyEvent>().size(), 300u);
    testing::TempPath tmp;
    ASSERT_TRUE(format::WriteTraceFile(in, tmp.path(), {.rows_per_chunk = rows_per_chunk}).ok());
    format::ReadReport report;
    auto out = format::ReadTraceFile(tmp.path(), &report);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_TRUE(report.clean()) << report.Describe();
    ExpectSameTrace(in, *out);
  }
}

// Collects the events the orderer releases (any kind, by a generated
// overload per event type) and passes each on to the CSV exporter's sink.
class TeeSink : public exporter::EventSink {
 public:
  explicit TeeSink(exporter::EventSink* next) : next_(next) {}
  Status Begin(const exporter::ExportContext& ctx) override { return next_->Begin(ctx); }
#define TS_TEE_ON(T, ...)                   \
  void On(const model::T& e) override {     \
    starts.push_back(model::EventStart(e)); \
    Keep(e);                                \
    next_->On(e);                           \
  }
  TS_FOR_EACH_EVENT_TYPE(TS_TEE_ON)
#undef TS_TEE_ON
  Status Finish(exporter::ExportStats* stats) override { return next_->Finish(stats); }

  std::vector<uint64_t> starts;
  std::vector<DummyEvent> dummies;

 private:
  void Keep(const DummyEvent& e) { dummies.push_back(e); }
  template <typename T>
  void Keep(const T&) {}
  exporter::EventSink* next_;
};

TEST(RecordList, DummyEventsGoThroughWriterReaderOrdererAndSink) {
  // Rows as the capture hands them out: through a RowSink, into the file
  // and (to compare with) into a Trace. Small chunks: the file holds many
  // chunks of each kind, so file order is not time order.
  testing::TempPath sbt;
  auto writer = format::SbtWriter::Open(sbt.path(), {.zstd_level = 1, .rows_per_chunk = 64});
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  capture::SbtSink to_file(writer->get());
  Trace expected;
  capture::TraceSink to_trace(&expected);
  constexpr uint32_t kRows = 1000;
  for (capture::RowSink* sink : std::initializer_list<capture::RowSink*>{&to_file, &to_trace}) {
    const uint32_t kernel = sink->Intern("gemm"), lane_name = sink->Intern("lane");
    sink->Append(model::Thread{.tid = 11, .pid = 7, .name_id = lane_name});
    for (uint32_t i = 0; i < kRows; ++i) {
      // A kernel every 10 ns, a dummy starting inside it and one more
      // dummy at the kernel's start but shorter (ties: longer first).
      sink->Append(KernelEvent{.start_ns = 1000 + 10 * uint64_t{i},
                               .end_ns = 1006 + 10 * uint64_t{i},
                               .correlation_id = i + 1,
                               .pid = 7,
                               .name_id = kernel});
      sink->Append(DummyEvent{.start_ns = 1000 + 10 * uint64_t{i} + (i % 2 ? 3 : 0),
                              .end_ns = 1000 + 10 * uint64_t{i} + 4,
                              .payload = uint64_t{i} * i,
                              .level = i / 4.0,
                              .pid = 7,
                              .lane = i % 3,
                              .name_id = lane_name});
    }
  }
  ASSERT_TRUE((*writer)->Close().ok());

  // Writer -> reader, whole.
  format::ReadReport report;
  auto read = format::ReadTraceFile(sbt.path(), &report);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(report.clean()) << report.Describe();
  ExpectSameTrace(expected, *read);
  EXPECT_EQ(read->EventCount(), 2u * kRows);
  EXPECT_EQ(read->TimeRange(), std::make_pair(uint64_t{1000}, 1000 + 10 * uint64_t{kRows - 1} + 6));

  // Writer -> reader, streamed -> time orderer -> sink, released as the
  // export does: up to the earliest start a later event chunk can hold.
  auto reader = format::SbtReader::Open(sbt.path());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::vector<uint64_t> suffix_min;
  size_t dummy_chunks = 0;
  for (const format::ChunkIndexEntry& c : (*reader)->chunks()) {
    if (c.type != static_cast<uint16_t>(format::ChunkType::kTable) ||
        c.table_kind >= model::kFirstMetadataTableKind)
      continue;
    suffix_min.push_back(c.min_ts);
    dummy_chunks += c.table_kind == static_cast<uint16_t>(model::TableKind::kDummy);
  }
  EXPECT_EQ(dummy_chunks, (kRows + 63) / 64);
  for (size_t i = suffix_min.size(); i-- > 1;)
    suffix_min[i - 1] = std::min(suffix_min[i - 1], suffix_min[i]);

  testing::TempPath csv(".csv");
  auto out = exporter::OutputFile::Open(csv.path(), false);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto csv_sink = exporter::MakeCsvSink(out->get());
  TeeSink tee(csv_sink.get());
  exporter::ExportContext ctx;
  ctx.meta = &*read;
  ASSERT_TRUE(tee.Begin(ctx).ok());
  exporter::TimeOrderer orderer(&tee, UINT64_MAX);
  size_t chunk = 0;
  Status st = (*reader)->Stream([&](const Trace& batch, model::TableKind) {
    orderer.Add(batch);
    ++chunk;
    orderer.Release(chunk < suffix_min.size() ? suffix_min[chunk] : 0);
    return OkStatus();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  orderer.ReleaseAll();
  exporter::ExportStats stats;
  ASSERT_TRUE(tee.Finish(&stats).ok());
  ASSERT_TRUE((*out)->Commit().ok());

  // Every event came out once, in start order; the dummies as written.
  EXPECT_EQ(tee.starts.size(), 2u * kRows);
  EXPECT_TRUE(std::is_sorted(tee.starts.begin(), tee.starts.end()));
  std::vector<DummyEvent> written = expected.Rows<DummyEvent>();
  ASSERT_EQ(tee.dummies.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i)
    EXPECT_TRUE(tee.dummies[i] == written[i]) << "dummy " << i;

  // The CSV exporter (compiled with the dummy) writes its kinds and keeps
  // the default no-op for the one it does not know.
  EXPECT_EQ(stats.kernel_events, kRows);
  auto text = ReadFileToString(csv.path());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(static_cast<size_t>(std::count(text->begin(), text->end(), '\n')), size_t{kRows} + 1);
  EXPECT_EQ(text->find("dummy"), std::string::npos);
  EXPECT_EQ(text->find("lane"), std::string::npos);
}

}  // namespace
}  // namespace tracesmith
