#include "sync_recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "tracesmith/capture/thread_rings.h"

namespace tracesmith::capture {
namespace {

struct SyncTag;
// 1024 rows per thread: the writer empties the rings every 5 ms.
using Rings = ThreadRings<model::SyncEvent, 1024, SyncTag>;

// The call in progress on this thread (synchronizing calls do not nest).
struct OpenSync {
  model::SyncEvent row;
  bool open = false;
};
thread_local OpenSync t_open;
thread_local uint32_t t_tid = 0;

bool PerThreadStream(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz;
}

}  // namespace

model::SyncType SyncRecorder::TypeOf(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
      return model::kSyncContextSynchronize;
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      return model::kSyncEventSynchronize;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      return model::kSyncStreamSynchronize;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz:
      return model::kSyncStreamWaitEvent;
    default:
      return model::kSyncUnknown;
  }
}

uint32_t SyncRecorder::EventId(CUevent event) {
  if (!event) return 0;
  std::lock_guard<std::mutex> lock(events_mu_);
  auto [it, inserted] = event_ids_.emplace(event, uint32_t(event_ids_.size() + 1));
  return it->second;
}

void SyncRecorder::OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                           uint32_t stack_id) {
  model::SyncEvent& r = t_open.row;
  r = model::SyncEvent{};
  r.sync_type = TypeOf(cbid);
  r.correlation_id = info->correlationId;
  r.stack_id = stack_id;
  r.pid = pid_;
  if (!t_tid) t_tid = uint32_t(syscall(SYS_gettid));
  r.tid = t_tid;
  CUcontext ctx = info->context;
  CUstream stream = nullptr;
  CUevent event = nullptr;
  bool has_stream = false;
  const void* p = info->functionParams;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
      if (p && static_cast<const cuCtxSynchronize_v2_params*>(p)->ctx)
        ctx = static_cast<const cuCtxSynchronize_v2_params*>(p)->ctx;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      if (p) event = static_cast<const cuEventSynchronize_params*>(p)->hEvent;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      // Both parameter structs are { CUstream hStream; }.
      if (p) stream = static_cast<const cuStreamSynchronize_params*>(p)->hStream;
      has_stream = true;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz:
      // Both are { CUstream hStream; CUevent hEvent; unsigned int Flags; }.
      if (p) {
        stream = static_cast<const cuStreamWaitEvent_params*>(p)->hStream;
        event = static_cast<const cuStreamWaitEvent_params*>(p)->hEvent;
      }
      has_stream = true;
      break;
    default:
      break;
  }
  if (ctx) {
    cuptiGetContextId(ctx, &r.context_id);
    cuptiGetDeviceId(ctx, &r.device_id);
    if (has_stream) {
      uint32_t id = 0;
      if (cuptiGetStreamIdEx(ctx, stream, PerThreadStream(cbid) ? 1 : 0, &id) == CUPTI_SUCCESS)
        r.stream_id = id;
    }
  }
  r.event_id = EventId(event);
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);  // last: the row's start is as close to the call as we can get
  r.start_ns = ts;
  t_open.open = true;
}

void SyncRecorder::OnExit(CUpti_CallbackId, const CUpti_CallbackData* info) {
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);
  if (!t_open.open || t_open.row.correlation_id != info->correlationId) return;
  t_open.open = false;
  t_open.row.end_ns = ts;
  Rings::Push(t_open.row);
}

uint64_t SyncRecorder::dropped() { return Rings::dropped(); }

void SyncRecorder::Claim(CallbackClaims& claims) {
  DriverClaim how;
  how.site = CostSite::kSync;
  how.exit = true;
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
    if (TypeOf(cbid) != model::kSyncUnknown) claims.Driver(cbid, how);
}

void SyncRecorder::OnDriverCall(const DriverCallEvent& call) {
  if (!call.entry) {
    OnExit(call.cbid, call.info);
  } else if (call.active) {
    OnEnter(call.cbid, call.info, call.stack_id);
  }
}

void SyncRecorder::Collect() {
  Rings::Drain([this](const model::SyncEvent& r) { pending_.push_back(r); });
}

void SyncRecorder::Write(format::SbtWriter& sbt, bool) {
  for (const model::SyncEvent& r : pending_) sbt.Append(r);
  pending_.clear();
}

void SyncRecorder::WriteStats(StatSink& stats) {
  stats.Add("capture.sync_ring_overflows", dropped(), model::kStatDataLoss);
}

std::unique_ptr<Recorder> MakeSyncRecorder(const RecorderContext& context) {
  const uint32_t groups = context.options->groups;
  if (!context.subscribed || !(groups & kGroupSync) || (groups & kGroupSyncActivity))
    return nullptr;
  return std::make_unique<SyncRecorder>(context.pid);
}

}  // namespace tracesmith::capture
