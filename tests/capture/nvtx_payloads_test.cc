// NVTX extended payloads decoded by their registered schemas
// (src/capture/nvtx_payloads.h): NCCL's layouts as NCCL 2.28 registers them
// (offsets given; the reduction an enum schema), natural alignment when no
// offset is given, what is left out, and schemas kept apart per domain.
#include "capture/nvtx_payloads.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace tracesmith::capture {
namespace {

constexpr uint64_t kUint64 = 18, kSize = 22, kInt = 5, kInt8 = 11, kDouble = 20, kAddress = 23;
constexpr uint64_t kRedOpEnum = (1u << 24) + 24;  // NCCL's static enum id
constexpr uint64_t kAllReduce = (1u << 24) + 5;   // NCCL's static schema id

struct AllReducePayload {  // NCCL's NcclNvtxParamsAllReduce
  uint64_t comm;
  size_t bytes;
  int op;
};

template <typename T>
std::vector<uint8_t> Bytes(const T& v) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

class NvtxPayloads : public ::testing::Test {
 protected:
  // Each test its own domain: the registry is the process's.
  const void* domain_ = this;
  NvtxPayloadSchemas& schemas_ = NvtxPayloadSchemas::Get();

  void RegisterNcclAllReduce() {
    schemas_.AddEnum(domain_, {kRedOpEnum, sizeof(int), {{"Sum", 0}, {"Prod", 1}, {"Max", 2}}});
    PayloadSchema s{kAllReduce, sizeof(AllReducePayload), {}};
    s.entries = {{"NCCL communicator ID", kUint64, 0, offsetof(AllReducePayload, comm)},
                 {"Message size [bytes]", kSize, 0, offsetof(AllReducePayload, bytes)},
                 {"Reduction operation", kRedOpEnum, 0, offsetof(AllReducePayload, op)}};
    EXPECT_EQ(schemas_.AddSchema(domain_, s), kAllReduce);
  }
};

TEST_F(NvtxPayloads, NcclAllReduceIsDecodedByItsSchema) {
  RegisterNcclAllReduce();
  const auto b = Bytes(AllReducePayload{0x1234abcdULL, 16u << 20, 2});
  EXPECT_EQ(schemas_.Describe(domain_, kAllReduce, b),
            "NCCL communicator ID=305441741; Message size [bytes]=16777216; "
            "Reduction operation=Max");
}

TEST_F(NvtxPayloads, AnEnumValueWithoutANameIsItsNumber) {
  RegisterNcclAllReduce();
  const auto b = Bytes(AllReducePayload{1, 8, 7});
  EXPECT_EQ(schemas_.Describe(domain_, kAllReduce, b),
            "NCCL communicator ID=1; Message size [bytes]=8; Reduction operation=7");
}

TEST_F(NvtxPayloads, UnknownSchemaOrDomainGivesNothing) {
  RegisterNcclAllReduce();
  const auto b = Bytes(AllReducePayload{1, 8, 0});
  EXPECT_EQ(schemas_.Describe(domain_, kAllReduce + 1, b), "");
  int other_domain = 0;
  EXPECT_EQ(schemas_.Describe(&other_domain, kAllReduce, b), "");
}

// The NVTX callback reads a payload's bytes only when its schema id is
// registered: an id no one registered (NCCL's calls inside a group gave stack
// addresses as ids on 2×H200) is not.
TEST_F(NvtxPayloads, OnlyRegisteredSchemaIdsAreRead) {
  constexpr uint64_t kNever = 0x7ffd4f043890;  // what such an entry held
  EXPECT_FALSE(schemas_.IsRegisteredId(kNever));
  EXPECT_FALSE(schemas_.IsRegisteredId((1u << 24) + 9999));
  PayloadSchema s{(1u << 24) + 9999, 8, {{"x", kUint64, 0, 0}}};
  schemas_.AddSchema(domain_, s);
  EXPECT_TRUE(schemas_.IsRegisteredId((1u << 24) + 9999));
  EXPECT_FALSE(schemas_.IsRegisteredId(kNever));
  // A dynamic id (none given) is known once assigned.
  const uint64_t dynamic = schemas_.AddSchema(domain_, PayloadSchema{0, 8, {{"y", kUint64, 0, 0}}});
  EXPECT_TRUE(schemas_.IsRegisteredId(dynamic));
}

TEST_F(NvtxPayloads, ShortPayloadKeepsTheEntriesItHolds) {
  RegisterNcclAllReduce();
  auto b = Bytes(AllReducePayload{9, 4096, 0});
  b.resize(offsetof(AllReducePayload, op));  // the reduction cut off
  EXPECT_EQ(schemas_.Describe(domain_, kAllReduce, b),
            "NCCL communicator ID=9; Message size [bytes]=4096");
  EXPECT_EQ(schemas_.Describe(domain_, kAllReduce, {}), "");
}

TEST_F(NvtxPayloads, EntriesWithoutOffsetsAreNaturallyAligned) {
  struct P {
    int8_t a;
    double d;
    int i;
    int64_t neg;
  };
  PayloadSchema s;  // no id: a dynamic one is given
  s.entries = {{"a", kInt8, 0, 0}, {"d", kDouble, 0, 0}, {"", kInt, 0, 0}, {"neg", 17, 0, 0}};
  const uint64_t id = schemas_.AddSchema(domain_, s);
  EXPECT_GE(id, nvtx_payload::kDynamicSchemaStart);
  const auto b = Bytes(P{-3, 0.5, 42, -9000000000LL});
  EXPECT_EQ(schemas_.Describe(domain_, id, b), "a=-3; d=0.5; #2=42; neg=-9000000000");
}

TEST_F(NvtxPayloads, HiddenEntriesAreSkippedAndPointersEndTheLayout) {
  struct P {
    uint64_t hidden;
    void* addr;
    const char* text;
    int after;
  };
  PayloadSchema s{77, sizeof(P), {}};
  s.entries = {{"secret", kUint64, nvtx_payload::kFlagHide, offsetof(P, hidden)},
               {"where", kAddress, 0, offsetof(P, addr)},
               {"text", 1 /* char */, nvtx_payload::kFlagPointer, offsetof(P, text)},
               {"after", kInt, 0, offsetof(P, after)}};
  schemas_.AddSchema(domain_, s);
  const auto b = Bytes(P{5, reinterpret_cast<void*>(0xdead0), nullptr, 3});
  EXPECT_EQ(schemas_.Describe(domain_, 77, b), "where=0xdead0");
}

TEST_F(NvtxPayloads, ScalarSizesFollowTheAbi) {
  EXPECT_EQ(PayloadScalarSize(kSize), sizeof(size_t));
  EXPECT_EQ(PayloadScalarSize(kInt), sizeof(int));
  EXPECT_EQ(PayloadScalarSize(kUint64), 8u);
  EXPECT_EQ(PayloadScalarSize(21), 0u);  // long double: not decoded
  EXPECT_EQ(PayloadScalarSize(75), 0u);  // C string
  EXPECT_EQ(PayloadScalarSize(kRedOpEnum), 0u);
}

}  // namespace
}  // namespace tracesmith::capture
