// Field access by descriptor: every type's width, signed widening and the
// way back (LoadField/StoreField, and the visitor the column codec shares).
#include <gtest/gtest.h>

#include <cstring>

#include "tracesmith/model/field.h"

namespace tracesmith::model {
namespace {

struct Row {
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  int32_t i32;
  uint64_t u64;
  int64_t i64;
  double f64;
};

constexpr FieldDesc kFields[] = {
    {"u8", offsetof(Row, u8), FieldType::kU8, FieldRole::kDelta},
    {"u16", offsetof(Row, u16), FieldType::kU16, FieldRole::kDelta},
    {"u32", offsetof(Row, u32), FieldType::kU32, FieldRole::kDelta},
    {"i32", offsetof(Row, i32), FieldType::kI32, FieldRole::kDelta},
    {"u64", offsetof(Row, u64), FieldType::kU64, FieldRole::kDelta},
    {"i64", offsetof(Row, i64), FieldType::kI64, FieldRole::kDelta},
    {"f64", offsetof(Row, f64), FieldType::kF64, FieldRole::kRaw},
};

TEST(FieldTest, EachTypeLoadsItsOwnWidthAndSignedOnesSignExtend) {
  Row r{.u8 = 0xfe,
        .u16 = 0xfffe,
        .u32 = 0xfffffffe,
        .i32 = -2,
        .u64 = ~uint64_t{1},
        .i64 = -2,
        .f64 = -0.5};
  EXPECT_EQ(LoadField(&r, kFields[0]), 0xfeu);
  EXPECT_EQ(LoadField(&r, kFields[1]), 0xfffeu);
  EXPECT_EQ(LoadField(&r, kFields[2]), 0xfffffffeu);
  EXPECT_EQ(LoadField(&r, kFields[3]), ~uint64_t{1});  // -2 as 64 bits
  EXPECT_EQ(LoadField(&r, kFields[4]), ~uint64_t{1});
  EXPECT_EQ(LoadField(&r, kFields[5]), ~uint64_t{1});
  uint64_t bits;
  double half = -0.5;
  std::memcpy(&bits, &half, 8);
  EXPECT_EQ(LoadField(&r, kFields[6]), bits);
}

TEST(FieldTest, StoreKeepsTheLowBitsAndTouchesNothingElse) {
  Row r{};
  for (const FieldDesc& f : kFields) StoreField(&r, f, ~uint64_t{2});  // ...fffd
  EXPECT_EQ(r.u8, 0xfdu);
  EXPECT_EQ(r.u16, 0xfffdu);
  EXPECT_EQ(r.u32, 0xfffffffdu);
  EXPECT_EQ(r.i32, -3);
  EXPECT_EQ(r.u64, ~uint64_t{2});
  EXPECT_EQ(r.i64, -3);
  Row z{};
  StoreField(&z, kFields[1], 0x12345);  // u16: the neighbours stay zero
  EXPECT_EQ(z.u16, 0x2345u);
  EXPECT_EQ(z.u8, 0u);
  EXPECT_EQ(z.u32, 0u);
  for (const FieldDesc& f : kFields) {  // and every type loads what it stored
    Row t{};
    StoreField(&t, f, LoadField(&r, f));
    EXPECT_EQ(LoadField(&t, f), LoadField(&r, f)) << f.name;
  }
}

TEST(FieldTest, VisitorGivesEachTypeItsStorageWidth) {
  auto width = [](FieldType t) {
    return VisitFieldBits(t, []<typename V>() { return sizeof(V); });
  };
  EXPECT_EQ(width(FieldType::kU8), 1u);
  EXPECT_EQ(width(FieldType::kU16), 2u);
  EXPECT_EQ(width(FieldType::kU32), 4u);
  EXPECT_EQ(width(FieldType::kI32), 4u);
  EXPECT_EQ(width(FieldType::kU64), 8u);
  EXPECT_EQ(width(FieldType::kI64), 8u);
  EXPECT_EQ(width(FieldType::kF64), 8u);
  EXPECT_EQ(WidenFieldBits(int32_t{-1}), ~uint64_t{0});
  EXPECT_EQ(WidenFieldBits(uint32_t{0xffffffff}), 0xffffffffu);
}

}  // namespace
}  // namespace tracesmith::model
