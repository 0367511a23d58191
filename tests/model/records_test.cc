#include "tracesmith/model/records.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "testing/random_records.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::model {
namespace {

TEST(RecordsTest, DescriptorsCoverEveryByteOfEveryField) {
  ForEachRecordType([&]<typename T>() {
    using Tr = RecordTraits<T>;
    std::set<std::string> names;
    size_t bytes = 0;
    for (size_t i = 0; i < Tr::kNumFields; ++i) {
      EXPECT_TRUE(names.insert(Tr::kAllFields[i].name).second) << Tr::kLabel;
      static constexpr size_t kSizes[] = {1, 2, 4, 8, 4, 8, 8};
      bytes += kSizes[static_cast<int>(Tr::kAllFields[i].type)];
    }
    // No field of the struct is missing from its descriptor list.
    EXPECT_LE(bytes, sizeof(T)) << Tr::kLabel;
    EXPECT_GE(bytes + 8 * 3, sizeof(T)) << Tr::kLabel << " has undescribed members?";
  });
}

TEST(RecordsTest, EventsStartWithTheirTimestamp) {
  ForEachRecordType([&]<typename T>() {
    using Tr = RecordTraits<T>;
    if constexpr (Tr::kIsEvent) {
      EXPECT_EQ(Tr::kAllFields[0].role, FieldRole::kTime) << Tr::kLabel;
      EXPECT_EQ(Tr::kAllFields[0].offset, 0) << Tr::kLabel;
    }
  });
}

TEST(RecordsTest, ConfigKeyRoundTrip) {
  std::mt19937_64 rng(7);
  ForEachRecordType([&]<typename T>() {
    T a = testing::RandomRecord<T>(rng);
    T b = testing::RandomRecord<T>(rng);
    b.SetConfig(a.GetConfig());
    EXPECT_TRUE(a.GetConfig() == b.GetConfig()) << RecordTraits<T>::kLabel;
    EXPECT_EQ(T::HashConfig(a.GetConfig()), T::HashConfig(b.GetConfig()));
  });
}

TEST(RecordsTest, LabelsAreUniqueAndKnown) {
  std::set<std::string> labels;
  ForEachRecordType([&]<typename T>() {
    EXPECT_TRUE(labels.insert(RecordTraits<T>::kLabel).second);
    EXPECT_STREQ(TableKindLabel(RecordTraits<T>::kKind), RecordTraits<T>::kLabel);
  });
  EXPECT_FALSE(IsKnownTableKind(999));
}

// The record list (records.h's TS_RECORD_TABLE) gives the file format's
// table kinds: these, in this order, with these numbers and labels, events
// first. New kinds are appended to their part (events or metadata), so the
// kinds here stay a prefix of each part.
TEST(RecordsTest, RecordListKeepsTheFormatsTableKinds) {
  struct Kind {
    uint16_t number;
    std::string label;
    bool operator==(const Kind&) const = default;
  };
  const std::vector<Kind> events = {
      {1, "kernel"}, {2, "memcpy"},    {3, "memset"}, {4, "sync"},    {5, "api"},
      {6, "nvtx"},   {7, "marker"},    {8, "memory"}, {9, "counter"}, {10, "module"},
      {11, "graph"}, {12, "overhead"}, {13, "drop"},
  };
  const std::vector<Kind> metadata = {
      {64, "device"}, {65, "process"},   {66, "thread"}, {67, "clock"},    {68, "mapping"},
      {69, "frame"},  {70, "stacknode"}, {71, "stat"},   {72, "metadata"},
  };
  std::vector<Kind> visited_events, visited_metadata, event_types;
  ForEachRecordType([&]<typename T>() {
    using Tr = RecordTraits<T>;
    (Tr::kIsEvent ? visited_events : visited_metadata)
        .push_back({static_cast<uint16_t>(Tr::kKind), Tr::kLabel});
    // Events first.
    if (Tr::kIsEvent) {
      EXPECT_TRUE(visited_metadata.empty()) << Tr::kLabel;
    }
  });
  ForEachType(EventTypes{}, [&]<typename T>() {
    event_types.push_back({static_cast<uint16_t>(RecordTraits<T>::kKind), RecordTraits<T>::kLabel});
  });
  ASSERT_GE(visited_events.size(), events.size());
  ASSERT_GE(visited_metadata.size(), metadata.size());
  EXPECT_TRUE(std::equal(events.begin(), events.end(), visited_events.begin()));
  EXPECT_TRUE(std::equal(metadata.begin(), metadata.end(), visited_metadata.begin()));
  EXPECT_TRUE(event_types == visited_events);
  EXPECT_EQ(RecordTypes::kSize, visited_events.size() + visited_metadata.size());
  EXPECT_EQ(kMaxEventTableKind, visited_events.back().number);
  EXPECT_EQ(kMaxTableKind, visited_metadata.back().number);
  // The enumerators are the table's numbers.
  EXPECT_EQ(static_cast<uint16_t>(TableKind::kKernel), 1);
  EXPECT_EQ(static_cast<uint16_t>(TableKind::kDrop), 13);
  EXPECT_EQ(static_cast<uint16_t>(TableKind::kDevice), kFirstMetadataTableKind);
  EXPECT_EQ(static_cast<uint16_t>(TableKind::kMetadata), 72);
  // The X-macro names the same rows in the same order.
  std::vector<std::string> macro;
#define TS_LABEL_OF(T, kind, number, label, ...) macro.push_back(label);
  TS_FOR_EACH_RECORD_TYPE(TS_LABEL_OF)
#undef TS_LABEL_OF
  ASSERT_EQ(macro.size(), RecordTypes::kSize);
  for (size_t i = 0; i < macro.size(); ++i)
    EXPECT_EQ(macro[i], i < visited_events.size()
                            ? visited_events[i].label
                            : visited_metadata[i - visited_events.size()].label);
}

TEST(RecordsTest, StringTableInternsAndPlacesById) {
  StringTable t;
  EXPECT_EQ(t.Intern(""), 0u);
  uint32_t a = t.Intern("gemm");
  EXPECT_EQ(t.Intern("gemm"), a);
  t.Set(10, "late");
  EXPECT_EQ(t.Get(10), "late");
  EXPECT_TRUE(t.Has(10));
  EXPECT_FALSE(t.Has(5));
  EXPECT_EQ(t.Get(5), "");
  EXPECT_EQ(t.Get(1000), "");
  EXPECT_EQ(t.Intern("late"), 10u);
}

TEST(RecordsTest, TimeRangeSpansAllEventKinds) {
  Trace t;
  t.Rows<KernelEvent>().push_back(KernelEvent{.start_ns = 100, .end_ns = 250});
  t.Rows<NvtxMarkerEvent>().push_back(NvtxMarkerEvent{.ts_ns = 50});
  t.Rows<ApiEvent>().push_back(ApiEvent{.start_ns = 90, .end_ns = 300});
  EXPECT_EQ(t.EventCount(), 3u);
  EXPECT_EQ(t.TimeRange(), std::make_pair(uint64_t{50}, uint64_t{300}));
}

}  // namespace
}  // namespace tracesmith::model

namespace tracesmith::model {
namespace {

// Overhead rows are named by what CUPTI spent the time on, as its header
// documents the kinds; an undocumented value keeps its number.
TEST(OverheadNames, CuptiKindsByName) {
  Trace t;
  OverheadEvent e;
  e.overhead_kind = 2u << 16;
  EXPECT_EQ(EventName(t, e), "Overhead: instrumentation");
  e.overhead_kind = 7u << 16;
  EXPECT_EQ(EventName(t, e), "Overhead: activity buffer request");
  e.overhead_kind = 1;
  EXPECT_EQ(EventName(t, e), "Overhead: driver compiler");
  e.overhead_kind = 9u << 16;
  EXPECT_EQ(EventName(t, e), "Overhead 589824");
  e.overhead_kind = (1u << 16) + 3;
  EXPECT_EQ(EventName(t, e), "Overhead 65539");
  EXPECT_EQ(OverheadKindName(8u << 16), std::string("UVM activity init"));
  e.overhead_kind = kOverheadPcSamplingDrain;  // TraceSmith's own
  EXPECT_EQ(EventName(t, e), "Overhead: PC sampling drain");
  EXPECT_TRUE(IsOwnOverheadKind(kOverheadPcSamplingDrain));
  EXPECT_FALSE(IsOwnOverheadKind(8u << 16));
}

}  // namespace
}  // namespace tracesmith::model
