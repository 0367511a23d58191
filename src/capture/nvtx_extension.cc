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

}  // namespace

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
