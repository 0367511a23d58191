#include "memory_recorder.h"

#include "memory_calls.h"
#include "tracesmith/capture/activity_converter.h"
#include "tracesmith/capture/thread_rings.h"

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

// Device memory in use on the current context's device (total - free).
bool MemoryUsedNow(uint64_t* used) {
  size_t free_bytes = 0, total_bytes = 0;
  if (cuMemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS || total_bytes < free_bytes)
    return false;
  *used = total_bytes - free_bytes;
  return true;
}

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

uint64_t MemoryRecorder::dropped() {
  return Rings::dropped() + MappingRings::dropped() + ImportRings::dropped();
}

void MemoryRecorder::CollectMappingCalls(std::vector<uint32_t>* out) {
  MappingRings::Drain([out](uint32_t corr) { out->push_back(corr); });
}

void MemoryRecorder::CollectImportCalls(std::vector<uint32_t>* out) {
  ImportRings::Drain([out](uint32_t corr) { out->push_back(corr); });
}

void MemoryRecorder::Claim(CallbackClaims& claims) {
  DriverClaim row;  // entry (when recording) and exit, with the stack
  row.site = CostSite::kAlloc;
  row.exit = true;
  DriverClaim stack_only;  // the engine's stack at entry, nothing of ours
  stack_only.site = CostSite::kAlloc;
  stack_only.entry = false;
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const MemoryCallback kind = ClassifyMemoryCallback(cbid);
    if (kind == MemoryCallback::kRow) {
      claims.Driver(cbid, row);
    } else if (kind == MemoryCallback::kStackOnly && claims.stacks_on()) {
      claims.Driver(cbid, stack_only);
    }
  }
  if (meminfo_at_context_) claims.ContextCreated();
}

void MemoryRecorder::OnDriverCall(const DriverCallEvent& call) {
  if (!call.entry) {
    OnExit(call.cbid, call.info);
  } else if (call.active) {
    OnEnter(call.cbid, call.info, call.stack_id);
  }
}

void MemoryRecorder::QueueMemoryInUse(uint32_t device_id, uint64_t used_bytes) {
  MemoryInUse m;
  m.ts_ns = 0;
  cuptiGetTimestamp(&m.ts_ns);
  m.used_bytes = used_bytes;
  m.device_id = device_id;
  std::lock_guard<std::mutex> lock(readings_mu_);
  readings_.push_back(m);
}

void MemoryRecorder::OnContextCreated(CUcontext ctx) {
  // Memory in use before the program's first allocation (the usual
  // `profile -- prog` case: no context exists when the capture starts).
  // Driver calls made here reach no callback of ours (none is enabled for
  // them); measured on the H100 (docs/capture.md).
  if (!ctx || cuCtxPushCurrent(ctx) != CUDA_SUCCESS) return;
  uint64_t used = 0;
  bool ok = MemoryUsedNow(&used);
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
  uint32_t device = 0;
  if (ok && cuptiGetDeviceId(ctx, &device) == CUPTI_SUCCESS) QueueMemoryInUse(device, used);
}

void MemoryRecorder::OnCaptureEdge() {
  int n = 0;
  if (cuDeviceGetCount(&n) != CUDA_SUCCESS) return;  // no cuInit yet: at context creation
  CUcontext current = nullptr;
  CUdevice current_device = -1;
  if (cuCtxGetCurrent(&current) != CUDA_SUCCESS || !current ||
      cuCtxGetDevice(&current_device) != CUDA_SUCCESS)
    current = nullptr;
  for (int i = 0; i < n; ++i) {
    CUdevice dev = 0;
    if (cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
    uint64_t used = 0;
    if (current && dev == current_device) {
      if (MemoryUsedNow(&used)) QueueMemoryInUse(uint32_t(i), used);
      continue;
    }
    // Another device: through its primary context, only when it is active
    // (retaining an inactive one would create it).
    unsigned int flags = 0;
    int active = 0;
    if (cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active) continue;
    CUcontext ctx = nullptr;
    if (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) continue;
    if (cuCtxPushCurrent(ctx) == CUDA_SUCCESS) {
      if (MemoryUsedNow(&used)) QueueMemoryInUse(uint32_t(i), used);
      CUcontext popped = nullptr;
      cuCtxPopCurrent(&popped);
    }
    cuDevicePrimaryCtxRelease(dev);
  }
}

void MemoryRecorder::Collect() {
  Rings::Drain([this](const model::MemoryEvent& r) { pending_.push_back(r); });
}

void MemoryRecorder::Write(format::SbtWriter& sbt, bool) {
  for (const model::MemoryEvent& r : pending_) sbt.Append(r);
  pending_.clear();
}

void MemoryRecorder::BeforeActivityBuffers(ActivityConverter& converter) {
  calls_.clear();
  CollectMappingCalls(&calls_);
  for (uint32_t corr : calls_) converter.NoteMappingCall(corr);
  calls_.clear();
  CollectImportCalls(&calls_);
  for (uint32_t corr : calls_) converter.NoteImportCall(corr);
}

void MemoryRecorder::AfterActivityBuffers(format::SbtWriter& sbt, bool) {
  std::vector<MemoryInUse> readings;
  {
    std::lock_guard<std::mutex> lock(readings_mu_);
    readings.swap(readings_);
  }
  for (const MemoryInUse& m : readings) {
    if (!meminfo_name_id_) meminfo_name_id_ = sbt.InternString(model::kDeviceMemoryUsedCounter);
    model::CounterEvent c;
    c.ts_ns = m.ts_ns;
    c.value = double(m.used_bytes);
    c.pid = pid_;
    c.device_id = m.device_id;
    c.name_id = meminfo_name_id_;
    sbt.Append(c);
  }
}

void MemoryRecorder::WriteStats(StatSink& stats) {
  stats.Add("capture.memory_ring_overflows", dropped(), model::kStatDataLoss);
}

std::unique_ptr<Recorder> MakeMemoryRecorder(const RecorderContext& context) {
  if (!context.subscribed || !(context.options->groups & kGroupMemory)) return nullptr;
  return std::make_unique<MemoryRecorder>(context.pid, context.options->tuning.meminfo_at_context);
}

}  // namespace tracesmith::capture
