#include "memory_calls.h"

namespace tracesmith::capture {

MemoryCallback ClassifyMemoryCallback(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      return MemoryCallback::kStackOnly;
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree:
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle:
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
      return MemoryCallback::kRow;
    default:
      return MemoryCallback::kNone;
  }
}

bool DecodeMemoryCall(CUpti_CallbackId cbid, const void* p, model::MemoryEvent* out,
                      uint32_t* device) {
  if (!p) return false;
  uint8_t op = 0;
  uint64_t address = 0, bytes = 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      const auto* x = static_cast<const cuMemCreate_params*>(p);
      if (!x->handle) return false;
      op = model::kMemoryVmmCreate;
      address = uint64_t(*x->handle);
      bytes = x->size;
      if (x->prop && x->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
          x->prop->location.id >= 0)
        *device = uint32_t(x->prop->location.id);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      op = model::kMemoryVmmRelease;
      address = uint64_t(static_cast<const cuMemRelease_params*>(p)->handle);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto* x = static_cast<const cuMemMap_params*>(p);
      op = model::kMemoryVmmMap;
      address = uint64_t(x->ptr);
      bytes = x->size;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto* x = static_cast<const cuMemUnmap_params*>(p);
      op = model::kMemoryVmmUnmap;
      address = uint64_t(x->ptr);
      bytes = x->size;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve: {
      const auto* x = static_cast<const cuMemAddressReserve_params*>(p);
      if (!x->ptr) return false;
      op = model::kMemoryVmmReserve;
      address = uint64_t(*x->ptr);
      bytes = x->size;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree: {
      const auto* x = static_cast<const cuMemAddressFree_params*>(p);
      op = model::kMemoryVmmUnreserve;
      address = uint64_t(x->ptr);
      bytes = x->size;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle:
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2: {
      // Both are { CUdeviceptr* pdptr; CUipcMemHandle handle; unsigned int Flags; }.
      const auto* x = static_cast<const cuIpcOpenMemHandle_v2_params*>(p);
      if (!x->pdptr) return false;
      op = model::kMemoryIpcOpen;
      address = uint64_t(*x->pdptr);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
      op = model::kMemoryIpcClose;
      address = uint64_t(static_cast<const cuIpcCloseMemHandle_params*>(p)->dptr);
      break;
    default:
      return false;
  }
  out->op = op;
  out->address = address;
  out->bytes = bytes;
  out->memory_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  out->is_async = 0;
  return true;
}

}  // namespace tracesmith::capture
