#include "tracesmith/model/records.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

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
}

}  // namespace
}  // namespace tracesmith::model
