// The enumeration fields (model/enum_fields.h): each names a real field of
// its table, and value names are those the CLI prints.
#include "tracesmith/model/enum_fields.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace tracesmith::model {
namespace {

TEST(EnumFieldsTest, EveryEntryIsAnIntegerFieldOfItsTable) {
  ASSERT_GE(EnumFields().size(), 12u);
  for (const EnumField& e : EnumFields()) {
    SCOPED_TRACE(std::string(TableKindLabel(e.table)) + "." + e.field);
    bool found = false;
    ForEachRecordType([&]<typename T>() {
      if (RecordTraits<T>::kKind != e.table) return;
      for (size_t i = 0; i < RecordTraits<T>::kNumFields; ++i) {
        const FieldDesc& f = RecordTraits<T>::kAllFields[i];
        if (std::strcmp(f.name, e.field) != 0) continue;
        found = true;
        EXPECT_TRUE(f.type == FieldType::kU8 || f.type == FieldType::kU32);
      }
    });
    EXPECT_TRUE(found);
    EXPECT_FALSE(e.names.empty());
  }
}

TEST(EnumFieldsTest, ValueNames) {
  EXPECT_STREQ(EnumValueName(TableKind::kMemcpy, "copy_kind", kCopyHtoD), "HtoD");
  EXPECT_STREQ(EnumValueName(TableKind::kMemcpy, "dst_kind", kMemPinned), "pinned");
  EXPECT_STREQ(EnumValueName(TableKind::kSync, "sync_type", kSyncStreamWaitEvent),
               "stream_wait_event");
  EXPECT_STREQ(EnumValueName(TableKind::kApi, "domain", kApiDriver), "driver");
  EXPECT_STREQ(EnumValueName(TableKind::kMemory, "op", kMemoryFree), "free");
  EXPECT_STREQ(EnumValueName(TableKind::kModuleLoad, "op", kModuleUnloaded), "unloaded");
  EXPECT_STREQ(EnumValueName(TableKind::kKernel, "launch_type", 1), "cooperative_single_device");
  EXPECT_STREQ(EnumValueName(TableKind::kMemcpy, "copy_kind", 200), "unknown");
  EXPECT_EQ(EnumValueName(TableKind::kKernel, "grid_x", 1), nullptr);
  EXPECT_EQ(EnumValueName(TableKind::kMemory, "copy_kind", 1), nullptr);  // not that table's
  // The names the CLI's event names use.
  EXPECT_STREQ(CopyKindName(kCopyDtoD), "DtoD");
  EXPECT_STREQ(MemoryKindName(kMemManaged), "managed");
  EXPECT_STREQ(SyncTypeName(kSyncContextSynchronize), "context_synchronize");
}

}  // namespace
}  // namespace tracesmith::model
