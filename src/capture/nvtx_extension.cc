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

#include <dlfcn.h>
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
// Depth of wrapped NVTX calls on this thread: CUPTI's NVTX callback, which runs inside the saved
// function, leaves the payloads to the wrapper then (InsideWrappedNvtxCall).
thread_local int t_wrapped_depth = 0;

// CUPTI's functions, one per entry point. Each program module with its own NVTX copy (torch,
// NCCL, the program) calls InitializeInjectionNvtx2 on its own; CUPTI fills every copy with its
// own functions, so a slot is saved once and a later copy's is wrapped only when it holds the
// same function (else that copy stays unwrapped: its payloads come through CUPTI's callback).
struct Saved {
  std::atomic<nvtxDomainRangePushEx_impl_fntype> domain_push{nullptr};
  std::atomic<nvtxDomainRangeStartEx_impl_fntype> domain_start{nullptr};
  std::atomic<nvtxDomainMarkEx_impl_fntype> domain_mark{nullptr};
  std::atomic<nvtxRangePushEx_impl_fntype> push{nullptr};
  std::atomic<nvtxRangeStartEx_impl_fntype> start{nullptr};
  std::atomic<nvtxMarkEx_impl_fntype> mark{nullptr};
} g_saved;

struct Wrapped {
  Wrapped() { ++t_wrapped_depth; }
  ~Wrapped() { --t_wrapped_depth; }
};

inline void See(const void* domain, const nvtxEventAttributes_t* attr) {
  if (!attr) return;
  if (NvtxPushHook hook = g_push_hook.load(std::memory_order_acquire)) hook(domain, attr);
}

// (NVTX_NO_PUSH_POP_TRACKING, what NVTX answers for a push without a tool.)
constexpr int kNoPushPopTracking = -2;

int NVTX_API DomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attr) {
  See(domain, attr);
  Wrapped w;
  auto f = g_saved.domain_push.load(std::memory_order_relaxed);
  return f ? f(domain, attr) : kNoPushPopTracking;
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t domain,
                                          const nvtxEventAttributes_t* attr) {
  See(domain, attr);
  Wrapped w;
  auto f = g_saved.domain_start.load(std::memory_order_relaxed);
  return f ? f(domain, attr) : 0;
}
void NVTX_API DomainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attr) {
  See(domain, attr);
  Wrapped w;
  if (auto f = g_saved.domain_mark.load(std::memory_order_relaxed)) f(domain, attr);
}
int NVTX_API RangePushEx(const nvtxEventAttributes_t* attr) {
  See(nullptr, attr);
  Wrapped w;
  auto f = g_saved.push.load(std::memory_order_relaxed);
  return f ? f(attr) : kNoPushPopTracking;
}
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* attr) {
  See(nullptr, attr);
  Wrapped w;
  auto f = g_saved.start.load(std::memory_order_relaxed);
  return f ? f(attr) : 0;
}
void NVTX_API MarkEx(const nvtxEventAttributes_t* attr) {
  See(nullptr, attr);
  Wrapped w;
  if (auto f = g_saved.mark.load(std::memory_order_relaxed)) f(attr);
}

// The object (dli_fbase) holding code address `fn`; null when none.
const void* ObjectOf(const void* fn) {
  Dl_info info;
  return dladdr(fn, &info) && info.dli_fbase ? info.dli_fbase : nullptr;
}

// Slot `id` of `module`: the function there is saved in `*saved` and the slot
// points at `wrapper`. Only a tool's function is wrapped: not an empty slot (a
// no-op), not the calling NVTX copy's own code (its init stubs, which the copy
// turns into no-ops only after this returns: a wrapper saved around one would
// call itself through the slot), not a wrapper, and not a function other than
// the one saved from an earlier copy.
template <typename Fn>
bool WrapSlot(const NvtxExportTableCallbacks* callbacks, const void* nvtx_object,
              NvtxCallbackModule module, unsigned id, std::atomic<Fn>* saved, Fn wrapper) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(module, &table, &size) || !table || id >= size ||
      !table[id] || !*table[id])
    return false;
  const auto fn = reinterpret_cast<Fn>(*table[id]);
  const void* object = ObjectOf(reinterpret_cast<const void*>(*table[id]));
  if (fn == wrapper || !object || object == nvtx_object ||
      object == ObjectOf(reinterpret_cast<const void*>(wrapper)))
    return false;
  Fn expected = nullptr;
  if (!saved->compare_exchange_strong(expected, fn) && expected != fn) return false;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(wrapper);
  return true;
}

}  // namespace

void SetNvtxPushHook(NvtxPushHook hook) { g_push_hook.store(hook, std::memory_order_release); }
bool InsideWrappedNvtxCall() { return t_wrapped_depth > 0; }

bool WrapNvtxCore(const void* get_export_table) {
  auto get = reinterpret_cast<NvtxGetExportTableFunc_t>(const_cast<void*>(get_export_table));
  if (!get) return false;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      !callbacks->GetModuleFunctionTable)
    return false;
  const void* nvtx = ObjectOf(get_export_table);  // the NVTX copy that calls us
  bool any = false;
  any |= WrapSlot(callbacks, nvtx, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx,
                  &g_saved.domain_push, &DomainRangePushEx);
  any |= WrapSlot(callbacks, nvtx, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx,
                  &g_saved.domain_start, &DomainRangeStartEx);
  any |= WrapSlot(callbacks, nvtx, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx,
                  &g_saved.domain_mark, &DomainMarkEx);
  any |= WrapSlot(callbacks, nvtx, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, &g_saved.push,
                  &RangePushEx);
  any |= WrapSlot(callbacks, nvtx, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, &g_saved.start,
                  &RangeStartEx);
  any |=
      WrapSlot(callbacks, nvtx, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, &g_saved.mark, &MarkEx);
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
