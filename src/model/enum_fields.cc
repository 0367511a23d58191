#include "tracesmith/model/enum_fields.h"

namespace tracesmith::model {
namespace {

// CUpti_ActivityMemcpyKind (CopyKind).
constexpr const char* kCopyKinds[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                      "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
// CUpti_ActivityMemoryKind (MemoryKind).
constexpr const char* kMemoryKinds[] = {"unknown", "pageable", "pinned",        "device",
                                        "array",   "managed",  "device_static", "managed_static"};
// CUpti_ActivitySynchronizationType (SyncType).
constexpr const char* kSyncTypes[] = {"unknown", "event_synchronize", "stream_wait_event",
                                      "stream_synchronize", "context_synchronize"};
// CUpti_ActivityLaunchType.
constexpr const char* kLaunchTypes[] = {"regular", "cooperative_single_device",
                                        "cooperative_multi_device", "cbl_commandlist"};
constexpr const char* kApiDomains[] = {"unknown", "runtime", "driver"};
constexpr const char* kMemoryOps[] = {"unknown",       "alloc",    "free",      "vmm_create",
                                      "vmm_release",   "vmm_map",  "vmm_unmap", "vmm_reserve",
                                      "vmm_unreserve", "ipc_open", "ipc_close"};
constexpr const char* kModuleOps[] = {"unknown", "loaded", "unloaded"};
constexpr const char* kDropReasons[] = {"unknown", "cupti", "buffer_cap", "stack_table"};
constexpr const char* kFrameKinds[] = {"unknown", "native", "python"};
constexpr const char* kAppEventKinds[] = {"unknown", "range", "instant"};

constexpr EnumField kFields[] = {
    {TableKind::kKernel, "launch_type", kLaunchTypes},
    {TableKind::kMemcpy, "copy_kind", kCopyKinds},
    {TableKind::kMemcpy, "src_kind", kMemoryKinds},
    {TableKind::kMemcpy, "dst_kind", kMemoryKinds},
    {TableKind::kMemset, "memory_kind", kMemoryKinds},
    {TableKind::kSync, "sync_type", kSyncTypes},
    {TableKind::kApi, "domain", kApiDomains},
    {TableKind::kMemory, "op", kMemoryOps},
    {TableKind::kMemory, "memory_kind", kMemoryKinds},
    {TableKind::kModuleLoad, "op", kModuleOps},
    {TableKind::kDrop, "reason", kDropReasons},
    {TableKind::kFrame, "kind", kFrameKinds},
    {TableKind::kAppEvent, "kind", kAppEventKinds},
};

}  // namespace

std::span<const EnumField> EnumFields() { return kFields; }

const char* EnumValueName(TableKind table, std::string_view field, uint64_t value) {
  for (const EnumField& f : kFields)
    if (f.table == table && field == f.field)
      return value < f.names.size() ? f.names[value] : "unknown";
  return nullptr;
}

const char* CopyKindName(uint8_t kind) {
  return EnumValueName(TableKind::kMemcpy, "copy_kind", kind);
}
const char* MemoryKindName(uint8_t kind) {
  return EnumValueName(TableKind::kMemset, "memory_kind", kind);
}
const char* SyncTypeName(uint8_t type) {
  return EnumValueName(TableKind::kSync, "sync_type", type);
}

}  // namespace tracesmith::model
