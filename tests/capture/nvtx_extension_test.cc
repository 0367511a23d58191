// The capture's answer to NVTX's extension modules (include/tracesmith/capture/nvtx_extension.h),
// driven as the NVTX library drives it: the payload module's slots get the
// schema and enum registration functions, whose registrations (NVTX's own
// structs, as NCCL fills them) land in NvtxPayloadSchemas; other modules'
// slots stay empty.
#define NVTX_NO_IMPL
#include "tracesmith/capture/nvtx_extension.h"

#include <gtest/gtest.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "capture/nvtx_payloads.h"

namespace tracesmith::capture {
namespace {

using SchemaRegisterFn = uint64_t (*)(nvtxDomainHandle_t, const nvtxPayloadSchemaAttr_t*);
using EnumRegisterFn = uint64_t (*)(nvtxDomainHandle_t, const nvtxPayloadEnumAttr_t*);

struct Module {
  std::vector<intptr_t> slots;
  nvtxExtModuleSegment_t segment{};
  nvtxExtModuleInfo_t info{};
  explicit Module(uint16_t module_id, size_t slot_count = 63) : slots(slot_count, 0) {
    segment = {0, slot_count, slots.data()};
    info.nvtxVer = NVTX_VERSION;
    info.structSize = sizeof(nvtxExtModuleInfo_t);
    info.moduleId = module_id;
    info.compatId = NVTX_EXT_PAYLOAD_COMPATID;
    info.segmentsCount = 1;
    info.segments = &segment;
  }
};

TEST(NvtxExtension, PayloadModuleRegistersSchemasAndEnums) {
  Module m(NVTX_EXT_PAYLOAD_MODULEID);
  ASSERT_EQ(InitializeNvtxExtension(&m.info), 1);
  ASSERT_NE(m.slots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister], 0);
  ASSERT_NE(m.slots[NVTX3EXT_CBID_nvtxPayloadEnumRegister], 0);
  EXPECT_EQ(m.slots[NVTX3EXT_CBID_nvtxRangePushPayload], 0);  // not ours: a no-op
  EXPECT_NE(m.slots[NVTX3EXT_CBID_nvtxRangePopPayload], 0);
  auto reg_schema =
      reinterpret_cast<SchemaRegisterFn>(m.slots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister]);
  auto reg_enum = reinterpret_cast<EnumRegisterFn>(m.slots[NVTX3EXT_CBID_nvtxPayloadEnumRegister]);

  static int domain_object;
  auto domain = reinterpret_cast<nvtxDomainHandle_t>(&domain_object);
  const uint64_t enum_id = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 24;
  const nvtxPayloadEnum_t values[] = {{"Sum", 0, 0}, {"Max", 2, 0}};
  nvtxPayloadEnumAttr_t ea{};
  ea.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                 NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
  ea.entries = values;
  ea.numEntries = 2;
  ea.sizeOfEnum = sizeof(int);
  ea.schemaId = enum_id;
  EXPECT_EQ(reg_enum(domain, &ea), enum_id);

  struct Payload {
    uint64_t comm;
    size_t bytes;
    int op;
  };
  // As NCCL 2.28's NVTX3_FUNC_WITH_PARAMS registers ncclAllReduce's schema.
  const nvtxPayloadSchemaEntry_t entries[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0,
       offsetof(Payload, comm), nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0,
       offsetof(Payload, bytes), nullptr, nullptr},
      {0, enum_id, "Reduction operation", nullptr, 0, offsetof(Payload, op), nullptr, nullptr},
      {0, 0, nullptr, nullptr, 0, 0, nullptr, nullptr}};
  nvtxPayloadSchemaAttr_t sa{};
  sa.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                 NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
  sa.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
  sa.entries = entries;
  sa.numEntries = 3;
  sa.payloadStaticSize = sizeof(Payload);
  sa.schemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5;
  EXPECT_EQ(reg_schema(domain, &sa), sa.schemaId);

  const Payload p{42, 1u << 20, 2};
  uint8_t bytes[sizeof(Payload)];
  std::memcpy(bytes, &p, sizeof(p));
  EXPECT_EQ(NvtxPayloadSchemas::Get().Describe(domain, sa.schemaId, bytes),
            "NCCL communicator ID=42; Message size [bytes]=1048576; Reduction operation=Max");

  // Without a count, the entries end at the first of type 0; no id: a dynamic one.
  sa.fieldMask &= ~uint64_t(NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                            NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID);
  const uint64_t id = reg_schema(domain, &sa);
  EXPECT_GE(id, uint64_t(NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START));
  EXPECT_EQ(NvtxPayloadSchemas::Get().Describe(domain, id, bytes),
            "NCCL communicator ID=42; Message size [bytes]=1048576; Reduction operation=Max");
  EXPECT_EQ(reg_schema(domain, nullptr), 0u);
}

// nvtxRangePopPayload (NCCL's ncclCommInitRank ends its range so) reaches the
// capture's hook with the domain and the payloads; without a hook, nothing.
TEST(NvtxExtension, PopWithPayloadGoesToTheCapturesHook) {
  Module m(NVTX_EXT_PAYLOAD_MODULEID);
  ASSERT_EQ(InitializeNvtxExtension(&m.info), 1);
  using PopFn = int (*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, size_t);
  auto pop = reinterpret_cast<PopFn>(m.slots[NVTX3EXT_CBID_nvtxRangePopPayload]);
  static int domain_object;
  auto domain = reinterpret_cast<nvtxDomainHandle_t>(&domain_object);
  const uint64_t value = 7;
  const nvtxPayloadData_t data{NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 0, sizeof(value), &value};
  EXPECT_EQ(pop(domain, &data, 1), 0);  // no hook yet: nothing happens
  static struct Seen {
    const void* domain = nullptr;
    const void* data = nullptr;
    size_t count = 0;
  } seen;
  SetNvtxPopPayloadHook([](const void* d, const void* p, size_t n) { seen = {d, p, n}; });
  EXPECT_EQ(pop(domain, &data, 1), 0);
  SetNvtxPopPayloadHook(nullptr);
  EXPECT_EQ(seen.domain, domain);
  EXPECT_EQ(seen.data, &data);
  EXPECT_EQ(seen.count, 1u);
}

TEST(NvtxExtension, OtherModulesGetNothing) {
  Module m(NVTX_EXT_PAYLOAD_MODULEID + 1);
  EXPECT_EQ(InitializeNvtxExtension(&m.info), 1);
  for (intptr_t s : m.slots) EXPECT_EQ(s, 0);
  EXPECT_EQ(InitializeNvtxExtension(nullptr), 1);
  Module tiny(NVTX_EXT_PAYLOAD_MODULEID, 1);  // an older module with one slot
  EXPECT_EQ(InitializeNvtxExtension(&tiny.info), 1);
  EXPECT_NE(tiny.slots[0], 0);
}

// NVTX's core tables as the NVTX library keeps them, each slot filled with a tool's function
// (the fake tool library stands in for CUPTI) or the NVTX copy's own init stub: WrapNvtxCore puts
// its wrappers in the tool's "Ex" slots only; a call then shows the hook the caller's own
// attributes and still reaches the function it replaced (issue #41 item 4: CUPTI's callback
// carried a stale copy of ncclAllReduce's attributes inside a coalesced group).
extern "C" {
extern int ts_fake_tool_calls;
extern const void* ts_fake_tool_saw;
int TsFakeToolDomainPush(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
void TsFakeToolMark(const nvtxEventAttributes_t*);
}

struct FakeNvtx {
  static inline NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {};
  static inline NvtxFunctionPointer* core_slots[NVTX_CBID_CORE_SIZE + 1] = {};
  static inline NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {};
  static inline NvtxFunctionPointer* core2_slots[NVTX_CBID_CORE2_SIZE + 1] = {};
  // The NVTX copy's init stub for nvtxRangePushEx: it calls the function in the slot (as NVTX's
  // does after initializing): a wrapper saved around it would call itself forever.
  static int NVTX_API InitStubPushEx(const nvtxEventAttributes_t* a) {
    return reinterpret_cast<nvtxRangePushEx_impl_fntype>(core[NVTX_CBID_CORE_RangePushEx])(a);
  }
  static int NVTX_API GetTable(NvtxCallbackModule module, NvtxFunctionTable* out,
                               unsigned int* size) {
    if (module == NVTX_CB_MODULE_CORE) {
      *out = core_slots;
      *size = NVTX_CBID_CORE_SIZE;
    } else if (module == NVTX_CB_MODULE_CORE2) {
      *out = core2_slots;
      *size = NVTX_CBID_CORE2_SIZE;
    } else {
      return 0;
    }
    return 1;
  }
  static inline NvtxExportTableCallbacks callbacks{sizeof(NvtxExportTableCallbacks), &GetTable};
  static const void* NVTX_API GetExportTable(uint32_t id) {
    return id == NVTX_ETID_CALLBACKS ? &callbacks : nullptr;
  }
  FakeNvtx() {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) core_slots[i] = &core[i];
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) core2_slots[i] = &core2[i];
    core2[NVTX_CBID_CORE2_DomainRangePushEx] =
        reinterpret_cast<NvtxFunctionPointer>(&TsFakeToolDomainPush);
    core[NVTX_CBID_CORE_MarkEx] = reinterpret_cast<NvtxFunctionPointer>(&TsFakeToolMark);
    core[NVTX_CBID_CORE_RangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&InitStubPushEx);
  }
};

TEST(NvtxExtension, WrappedExEntryPointsShowTheCallersAttributesThenRunTheTools) {
  FakeNvtx nvtx;
  const auto push_slot = FakeNvtx::core2[NVTX_CBID_CORE2_DomainRangePushEx];
  const auto stub = FakeNvtx::core[NVTX_CBID_CORE_RangePushEx];
  ASSERT_TRUE(WrapNvtxCore(reinterpret_cast<const void*>(&FakeNvtx::GetExportTable)));
  EXPECT_NE(FakeNvtx::core2[NVTX_CBID_CORE2_DomainRangePushEx], push_slot);
  // Slots nobody filled stay empty (NVTX's no-ops); the copy's own init stub is not wrapped.
  EXPECT_EQ(FakeNvtx::core2[NVTX_CBID_CORE2_DomainMarkEx], nullptr);
  EXPECT_EQ(FakeNvtx::core[NVTX_CBID_CORE_RangePushEx], stub);
  // Wrapping again wraps nothing (no wrapper around a wrapper).
  EXPECT_FALSE(WrapNvtxCore(reinterpret_cast<const void*>(&FakeNvtx::GetExportTable)));

  static struct Seen {
    const void* domain = nullptr;
    const void* attr = nullptr;
    int calls = 0;
    bool inside = true;  // InsideWrappedNvtxCall() when the hook ran (before the tool's)
  } seen;
  SetNvtxPushHook([](const void* d, const void* a) {
    seen = {d, a, seen.calls + 1, InsideWrappedNvtxCall()};
  });
  static int domain_object;
  auto domain = reinterpret_cast<nvtxDomainHandle_t>(&domain_object);
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  auto push = reinterpret_cast<nvtxDomainRangePushEx_impl_fntype>(
      FakeNvtx::core2[NVTX_CBID_CORE2_DomainRangePushEx]);
  const int tool0 = ts_fake_tool_calls;
  EXPECT_EQ(push(domain, &attr), 3);  // the tool's answer
  EXPECT_EQ(seen.domain, domain);
  EXPECT_EQ(seen.attr, &attr);
  EXPECT_FALSE(seen.inside);
  EXPECT_EQ(ts_fake_tool_calls, tool0 + 1);
  EXPECT_EQ(ts_fake_tool_saw, &attr);
  EXPECT_FALSE(InsideWrappedNvtxCall());
  auto mark = reinterpret_cast<nvtxMarkEx_impl_fntype>(FakeNvtx::core[NVTX_CBID_CORE_MarkEx]);
  mark(&attr);
  EXPECT_EQ(seen.domain, nullptr);
  EXPECT_EQ(seen.calls, 2);
  EXPECT_EQ(ts_fake_tool_calls, tool0 + 2);
  SetNvtxPushHook(nullptr);
  EXPECT_EQ(push(domain, &attr), 3);  // no hook: the tool's function alone
  EXPECT_EQ(seen.calls, 2);
  EXPECT_FALSE(WrapNvtxCore(nullptr));
}

}  // namespace
}  // namespace tracesmith::capture
