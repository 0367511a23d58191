// NVTX's extension modules meet the capture here: the NVTX library calls the
// injection library's InitializeInjectionNvtxExtension (injection.cc) once
// per extension module a program uses; for the payload module this fills
// the schema and enum registration slots with functions that keep what a
// library registers (NvtxPayloadSchemas, nvtx_payloads.h), and
// nvtxRangePopPayload's with one that hands the payload and the pop to the
// capture (SetNvtxPopPayloadHook). Other modules' slots are left empty: the NVTX library makes them
// no-ops, as it did before the capture answered at all.
#define NVTX_NO_IMPL
#include "tracesmith/capture/nvtx_extension.h"

#include <nvtx3/nvToolsExtPayload.h>

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "nvtx_payloads.h"

namespace tracesmith::capture {

static_assert(sizeof(NvtxPayloadData) == sizeof(nvtxPayloadData_t) &&
                  offsetof(NvtxPayloadData, schema_id) == offsetof(nvtxPayloadData_t, schemaId) &&
                  offsetof(NvtxPayloadData, size) == offsetof(nvtxPayloadData_t, size) &&
                  offsetof(NvtxPayloadData, payload) == offsetof(nvtxPayloadData_t, payload),
              "NvtxPayloadData mirrors NVTX's nvtxPayloadData_t");

namespace {

constexpr size_t kMaxEntries = 256;  // a schema with more is not one we decode

bool Has(uint64_t mask, uint64_t field) { return (mask & field) != 0; }

uint64_t NVTX_API RegisterSchema(nvtxDomainHandle_t domain, const nvtxPayloadSchemaAttr_t* attr) {
  if (!attr) return 0;
  PayloadSchema s;
  if (Has(attr->fieldMask, NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID)) s.id = attr->schemaId;
  if (Has(attr->fieldMask, NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE))
    s.size = attr->payloadStaticSize;
  const bool static_layout = !Has(attr->fieldMask, NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE) ||
                             attr->type == NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
  if (static_layout && Has(attr->fieldMask, NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) &&
      attr->entries) {
    // Without a count the entries end at one of type 0.
    const size_t n = Has(attr->fieldMask, NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES)
                         ? std::min(attr->numEntries, kMaxEntries)
                         : kMaxEntries;
    for (size_t i = 0; i < n; ++i) {
      const nvtxPayloadSchemaEntry_t& e = attr->entries[i];
      if (e.type == 0 && !Has(attr->fieldMask, NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES)) break;
      s.entries.push_back({e.name ? e.name : "", e.type, e.flags, e.offset});
    }
  }
  return NvtxPayloadSchemas::Get().AddSchema(domain, std::move(s));
}

uint64_t NVTX_API RegisterEnum(nvtxDomainHandle_t domain, const nvtxPayloadEnumAttr_t* attr) {
  if (!attr) return 0;
  PayloadEnum e;
  if (Has(attr->fieldMask, NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID)) e.id = attr->schemaId;
  if (Has(attr->fieldMask, NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE)) e.size = attr->sizeOfEnum;
  if (Has(attr->fieldMask, NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES) && attr->entries &&
      Has(attr->fieldMask, NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES)) {
    const size_t n = std::min(attr->numEntries, kMaxEntries);
    for (size_t i = 0; i < n; ++i)
      e.values.emplace_back(attr->entries[i].name ? attr->entries[i].name : "",
                            attr->entries[i].value);
  }
  return NvtxPayloadSchemas::Get().AddEnum(domain, std::move(e));
}

std::atomic<NvtxPopPayloadHook> g_pop_hook{nullptr};

int NVTX_API PopPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t* data, size_t count) {
  if (NvtxPopPayloadHook hook = g_pop_hook.load(std::memory_order_acquire))
    hook(domain, data, count);
  return 0;
}

// NVTX's core "Ex" entry points (the ones with event attributes), wrapped:
// the hook sees the caller's own attributes, then CUPTI's function runs. CUPTI
// hands its NVTX callback a copy of the attributes that it does not always
// refresh: inside a torch coalesced group (ncclGroupStart ... ncclGroupEnd),
// every ncclAllReduce's callback showed the first ncclAllReduce's
// attributes, whose payload pointer named a stack frame long gone (2xH200,
// 2026-11-30 20:15: schema ids that were stack addresses). The wrapper reads
// the caller's attributes, valid for the call.
std::atomic<NvtxPushHook> g_push_hook{nullptr};
std::atomic<bool> g_wrapped{false};

struct Saved {
  nvtxDomainRangePushEx_impl_fntype domain_push = nullptr;
  nvtxDomainRangeStartEx_impl_fntype domain_start = nullptr;
  nvtxDomainMarkEx_impl_fntype domain_mark = nullptr;
  nvtxRangePushEx_impl_fntype push = nullptr;
  nvtxRangeStartEx_impl_fntype start = nullptr;
  nvtxMarkEx_impl_fntype mark = nullptr;
} g_saved;  // written once, before the slots point at the wrappers

inline void See(const void* domain, const nvtxEventAttributes_t* attr) {
  if (!attr) return;
  if (NvtxPushHook hook = g_push_hook.load(std::memory_order_acquire)) hook(domain, attr);
}

int NVTX_API DomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attr) {
  See(domain, attr);
  return g_saved.domain_push ? g_saved.domain_push(domain, attr) : 0;
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t domain,
                                          const nvtxEventAttributes_t* attr) {
  See(domain, attr);
  return g_saved.domain_start ? g_saved.domain_start(domain, attr) : 0;
}
void NVTX_API DomainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attr) {
  See(domain, attr);
  if (g_saved.domain_mark) g_saved.domain_mark(domain, attr);
}
int NVTX_API RangePushEx(const nvtxEventAttributes_t* attr) {
  See(nullptr, attr);
  return g_saved.push ? g_saved.push(attr) : 0;
}
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* attr) {
  See(nullptr, attr);
  return g_saved.start ? g_saved.start(attr) : 0;
}
void NVTX_API MarkEx(const nvtxEventAttributes_t* attr) {
  See(nullptr, attr);
  if (g_saved.mark) g_saved.mark(attr);
}

// Slot `id` of `module`: the function there is saved in `*saved` and the slot
// points at `wrapper`. False when the table has no such slot or it is empty
// (the tool before us left it a no-op: nothing to wrap).
template <typename Fn>
bool WrapSlot(const NvtxExportTableCallbacks* callbacks, NvtxCallbackModule module, unsigned id,
              Fn* saved, Fn wrapper) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(module, &table, &size) || !table || id >= size ||
      !table[id] || !*table[id] || *table[id] == reinterpret_cast<NvtxFunctionPointer>(wrapper))
    return false;
  *saved = reinterpret_cast<Fn>(*table[id]);
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(wrapper);
  return true;
}

}  // namespace

void SetNvtxPushHook(NvtxPushHook hook) { g_push_hook.store(hook, std::memory_order_release); }
bool NvtxPushesWrapped() { return g_wrapped.load(std::memory_order_acquire); }

bool WrapNvtxCore(const void* get_export_table) {
  auto get = reinterpret_cast<NvtxGetExportTableFunc_t>(const_cast<void*>(get_export_table));
  if (!get) return false;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      !callbacks->GetModuleFunctionTable)
    return false;
  bool any = false;
  any |= WrapSlot(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx,
                  &g_saved.domain_push, &DomainRangePushEx);
  any |= WrapSlot(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx,
                  &g_saved.domain_start, &DomainRangeStartEx);
  any |= WrapSlot(callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx,
                  &g_saved.domain_mark, &DomainMarkEx);
  any |= WrapSlot(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, &g_saved.push,
                  &RangePushEx);
  any |= WrapSlot(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, &g_saved.start,
                  &RangeStartEx);
  any |= WrapSlot(callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, &g_saved.mark, &MarkEx);
  if (any) g_wrapped.store(true, std::memory_order_release);
  return any;
}

void SetNvtxPopPayloadHook(NvtxPopPayloadHook hook) {
  g_pop_hook.store(hook, std::memory_order_release);
}

int InitializeNvtxExtension(nvtxExtModuleInfo_t* info) {
  if (!info || info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || info->segmentsCount < 1 ||
      !info->segments)
    return 1;  // another module: its slots stay empty (no-ops)
  nvtxExtModuleSegment_t& seg = info->segments[0];
  if (!seg.functionSlots) return 1;
  if (seg.slotCount > NVTX3EXT_CBID_nvtxPayloadSchemaRegister)
    seg.functionSlots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister] =
        reinterpret_cast<intptr_t>(&RegisterSchema);
  if (seg.slotCount > NVTX3EXT_CBID_nvtxPayloadEnumRegister)
    seg.functionSlots[NVTX3EXT_CBID_nvtxPayloadEnumRegister] =
        reinterpret_cast<intptr_t>(&RegisterEnum);
  if (seg.slotCount > NVTX3EXT_CBID_nvtxRangePopPayload)
    seg.functionSlots[NVTX3EXT_CBID_nvtxRangePopPayload] = reinterpret_cast<intptr_t>(&PopPayload);
  return 1;
}

}  // namespace tracesmith::capture
