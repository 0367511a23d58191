// ReplayCapturer's calls besides launches (replay_capture.h): the allocations the program
// makes and frees (the live set that --replay-memory reachable/all scans), and the stream ops
// range replay re-issues between launches (copies, memsets, event record/wait, syncs; decoded
// by replay_stream_ops.cc), recorded at their driver callbacks.
#include <cuda.h>
#include <cupti.h>

#include <mutex>
#include <vector>

#include "replay_capture.h"
#include "replay_stream_ops.h"

namespace tracesmith::replay_capture {
namespace {

using BusyScope = ReplayBusyScope;

// For a generic copy: HtoD, DtoD or DtoH from the pointers' memory types
// (a pointer the driver does not know is host memory); false for HtoH.
bool ResolveCopyKind(StreamOpCall* call) {
  auto on_device = [](uint64_t p) {
    unsigned int type = 0;
    return cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(p)) ==
               CUDA_SUCCESS &&
           (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED);
  };
  const bool dst = on_device(call->dst), src = on_device(call->src);
  call->generic_copy = false;
  if (dst && src) {
    call->kind = format::StreamOpKind::kCopyDtoD;
  } else if (dst) {
    call->kind = format::StreamOpKind::kCopyHtoD;
    call->host_src = reinterpret_cast<const void*>(call->src);
    call->src = 0;
  } else if (src) {
    call->kind = format::StreamOpKind::kCopyDtoH;
    call->dst = 0;
  } else {
    return false;
  }
  return true;
}

// The allocation an allocating driver call returned (at its exit): the
// out-pointer and the size; false for other calls.
bool AllocationOf(CUpti_CallbackId cbid, const void* p, CUdeviceptr** out, uint64_t* size) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto* x = static_cast<const cuMemAlloc_v2_params*>(p);
      *out = x->dptr;
      *size = x->bytesize;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto* x = static_cast<const cuMemAllocAsync_params*>(p);
      *out = x->dptr;
      *size = x->bytesize;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto* x = static_cast<const cuMemAllocFromPoolAsync_params*>(p);
      *out = x->dptr;
      *size = x->bytesize;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto* x = static_cast<const cuMemAllocManaged_params*>(p);
      *out = x->dptr;
      *size = x->bytesize;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto* x = static_cast<const cuMemAllocPitch_v2_params*>(p);
      *out = x->dptr;
      *size = x->pPitch ? uint64_t(*x->pPitch) * x->Height : 0;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {  // VMM: a mapped range counts as an allocation
      auto* x = const_cast<cuMemMap_params*>(static_cast<const cuMemMap_params*>(p));
      *out = &x->ptr;
      *size = x->size;
      return true;
    }
    default:
      return false;
  }
}

// The range a freeing driver call releases (at its entry); `size` 0: the
// allocation at `address`, whatever its size.
bool FreedBy(CUpti_CallbackId cbid, const void* p, uint64_t* address, uint64_t* size) {
  *size = 0;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemUnmap) {
    const auto* x = static_cast<const cuMemUnmap_params*>(p);
    *address = uint64_t(x->ptr);
    *size = x->size;
    return true;
  }
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2) {
    *address = uint64_t(static_cast<const cuMemFree_v2_params*>(p)->dptr);
    return true;
  }
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz) {
    *address = uint64_t(static_cast<const cuMemFreeAsync_params*>(p)->dptr);
    return true;
  }
  return false;
}
}  // namespace

bool ReplayCapturer::IsMemoryCallback(CUpti_CallbackId cbid) {
  alignas(8) static const uint8_t zeros[64] = {};  // the decoders only read the layout
  CUdeviceptr* out = nullptr;
  uint64_t n = 0, m = 0;
  return AllocationOf(cbid, zeros, &out, &n) || FreedBy(cbid, zeros, &n, &m);
}

void ReplayCapturer::OnMemory(CUpti_CallbackId cbid, const CUpti_CallbackData* info) {
  if (!tracks_allocations() || t_replay_busy || !info || !info->functionParams) return;
  CUdeviceptr* out = nullptr;
  uint64_t size = 0, address = 0;
  if (info->callbackSite == CUPTI_API_EXIT &&
      AllocationOf(cbid, info->functionParams, &out, &size)) {
    const auto* rc = static_cast<const CUresult*>(info->functionReturnValue);
    if ((rc && *rc != CUDA_SUCCESS) || !out || !*out || size == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    live_[uint64_t(*out)] = size;
  } else if (info->callbackSite == CUPTI_API_ENTER &&
             FreedBy(cbid, info->functionParams, &address, &size)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (size == 0) {
      live_.erase(address);
    } else {  // cuMemUnmap: every mapping inside the range
      live_.erase(live_.lower_bound(address), live_.lower_bound(address + size));
    }
  }
}

bool ReplayCapturer::IsStreamOpCallback(CUpti_CallbackId cbid) {
  return replay_capture::IsStreamOpCallback(cbid);
}

uint32_t ReplayCapturer::StreamIdLocked(CUstream stream, bool per_thread, uint64_t before_launch) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY)
    return per_thread && stream == nullptr ? format::kPerThreadStream : format::kLegacyStream;
  if (stream == CU_STREAM_PER_THREAD) return format::kPerThreadStream;
  auto [it, fresh] = stream_ids_.emplace(stream, uint32_t(stream_ids_.size() + 2));
  if (fresh) {
    unsigned int flags = 0;
    int priority = 0;
    cuStreamGetFlags(stream, &flags);
    cuStreamGetPriority(stream, &priority);
    format::StreamOpRecord info;
    info.kind = format::StreamOpKind::kStreamInfo;
    info.before_launch = before_launch;
    info.seq = next_op_seq_++;
    info.stream = it->second;
    info.flags = flags;
    info.value = priority;
    ops_out_.push_back({info, {}});
  }
  return it->second;
}

uint32_t ReplayCapturer::EventIdLocked(CUevent event) {
  if (!event) return 0;
  return event_ids_.emplace(event, uint32_t(event_ids_.size() + 1)).first->second;
}

void ReplayCapturer::OnStreamOp(CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                                bool active) {
  if (t_replay_busy || !info || !active || info->callbackSite != CUPTI_API_ENTER ||
      !ops_on_.load(std::memory_order_relaxed))
    return;
  const uint64_t before = launch_counter_.load(std::memory_order_relaxed);
  // Past the last launch of a launch range nothing needs the op.
  if (filter_.kind == capture::ReplayFilter::Kind::kLaunchRange && before > filter_.last) return;
  StreamOpCall c;
  if (!DecodeStreamOp(cbid, info->functionParams, &c)) return;
  BusyScope busy;  // our own CUDA calls below are not ops
  // An op on a stream that is capturing a CUDA graph is captured, not run: it
  // is a node of the graph, recorded with the graph's launches; querying the
  // stream (StreamIdLocked) would invalidate the program's capture, as it did
  // for launches (OnEnter). The legacy stream is never capturing (ops on it
  // during a global capture are the program's error); the per-thread one can.
  const CUstream asked = c.stream != nullptr ? c.stream
                         : c.per_thread      ? CU_STREAM_PER_THREAD
                                             : nullptr;
  if (asked != nullptr && asked != CU_STREAM_LEGACY && Capturing(asked)) return;
  if (c.generic_copy && !ResolveCopyKind(&c)) return;  // host to host
  // A null source is the driver's error to report; reading it would crash the program.
  if (c.kind == format::StreamOpKind::kCopyHtoD && c.bytes && !c.host_src) return;
  std::vector<uint8_t> data;
  if (c.kind == format::StreamOpKind::kCopyHtoD) {
    std::lock_guard<std::mutex> lock(mu_);
    if (reserved_bytes_ + c.bytes > max_bytes_) {
      ops_on_.store(false, std::memory_order_relaxed);
      Note(
          "--replay-max-mb reached by a %llu-byte host-to-device copy before launch %llu; "
          "copies, memsets and stream events are no longer recorded (range replay stops "
          "there)",
          static_cast<unsigned long long>(c.bytes), static_cast<unsigned long long>(before));
      return;
    }
    reserved_bytes_ += c.bytes;
  }
  if (c.kind == format::StreamOpKind::kCopyHtoD && c.bytes) {
    const auto* p = static_cast<const uint8_t*>(c.host_src);
    data.assign(p, p + c.bytes);  // the program's bytes as it hands them over
  }
  std::lock_guard<std::mutex> lock(mu_);
  format::StreamOpRecord op;
  op.kind = c.kind;
  op.stream = StreamIdLocked(c.stream, c.per_thread, before);
  op.event = EventIdLocked(c.event);
  op.before_launch = before;
  op.seq = next_op_seq_++;
  op.dst = c.dst;
  op.src = c.src;
  op.bytes = c.bytes;
  op.value = c.value;
  op.element_size = c.element_size;
  ++stats_.stream_ops;
  ops_out_.push_back({op, std::move(data)});
}

}  // namespace tracesmith::replay_capture
