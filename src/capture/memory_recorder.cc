#include "memory_recorder.h"

#include "memory_calls.h"
#include "thread_rings.h"

namespace tracesmith::capture {
namespace {

struct MemoryTag;
// 1024 rows per thread: the writer empties the rings every 5 ms.
using Rings = ThreadRings<model::MemoryEvent, 1024, MemoryTag>;
struct MappingTag;
// Correlation ids of cuMemMap/cuMemUnmap calls (ActivityConverter::NoteMappingCall).
using MappingRings = ThreadRings<uint32_t, 1024, MappingTag>;
struct ImportTag;
// Correlation ids of IPC open/close calls (ActivityConverter::NoteImportCall).
using ImportRings = ThreadRings<uint32_t, 1024, ImportTag>;

// The call in progress on this thread (these calls do not nest).
struct OpenCall {
  uint64_t ts_ns = 0;
  uint32_t correlation_id = 0, stack_id = 0;
  bool open = false;
};
thread_local OpenCall t_open;

}  // namespace

void MemoryRecorder::OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                             uint32_t stack_id) {
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemMap || cbid == CUPTI_DRIVER_TRACE_CBID_cuMemUnmap)
    MappingRings::Push(info->correlationId);
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2 ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle)
    ImportRings::Push(info->correlationId);
  OpenCall& o = t_open;
  o.correlation_id = info->correlationId;
  o.stack_id = stack_id;
  cuptiGetTimestamp(&o.ts_ns);
  o.open = true;
}

void MemoryRecorder::OnExit(CUpti_CallbackId cbid, const CUpti_CallbackData* info) {
  OpenCall& o = t_open;
  if (!o.open || o.correlation_id != info->correlationId) return;
  o.open = false;
  const auto* rc = static_cast<const CUresult*>(info->functionReturnValue);
  if (rc && *rc != CUDA_SUCCESS) return;
  model::MemoryEvent e;
  uint32_t device = UINT32_MAX;
  if (!DecodeMemoryCall(cbid, info->functionParams, &e, &device)) return;
  e.ts_ns = o.ts_ns;
  e.correlation_id = o.correlation_id;
  e.stack_id = o.stack_id;
  e.pid = pid_;
  if (info->context) {
    cuptiGetContextId(info->context, &e.context_id);
    cuptiGetDeviceId(info->context, &e.device_id);
  }
  if (device != UINT32_MAX) e.device_id = device;
  Rings::Push(e);
}

void MemoryRecorder::Collect(std::vector<model::MemoryEvent>* out) {
  Rings::Drain([out](const model::MemoryEvent& r) { out->push_back(r); });
}

uint64_t MemoryRecorder::dropped() {
  return Rings::dropped() + MappingRings::dropped() + ImportRings::dropped();
}

void MemoryRecorder::CollectMappingCalls(std::vector<uint32_t>* out) {
  MappingRings::Drain([out](uint32_t corr) { out->push_back(corr); });
}

void MemoryRecorder::CollectImportCalls(std::vector<uint32_t>* out) {
  ImportRings::Drain([out](uint32_t corr) { out->push_back(corr); });
}

}  // namespace tracesmith::capture
