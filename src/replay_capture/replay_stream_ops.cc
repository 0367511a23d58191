#include "replay_stream_ops.h"

namespace tracesmith::replay_capture {
namespace {

using format::StreamOpKind;

// Parameter layouts shared by many entry points (generated_cuda_meta.h):
// the _v2, _ptds and _ptsz variants of one call have the same fields.
template <typename P>
void Copy(const void* p, StreamOpKind kind, StreamOpCall* out) {
  const auto* x = static_cast<const P*>(p);
  out->kind = kind;
  out->bytes = x->ByteCount;
  if constexpr (requires { x->hStream; }) out->stream = x->hStream;
  if constexpr (requires { x->srcHost; }) {
    out->dst = uint64_t(x->dstDevice);
    out->host_src = x->srcHost;
  } else if constexpr (requires { x->dstHost; }) {
    out->src = uint64_t(x->srcDevice);
  } else if constexpr (requires { x->dstDevice; }) {
    out->dst = uint64_t(x->dstDevice);
    out->src = uint64_t(x->srcDevice);
  } else {  // cuMemcpy / cuMemcpyAsync: unified addressing
    out->dst = uint64_t(x->dst);
    out->src = uint64_t(x->src);
    out->generic_copy = true;
  }
}

template <typename P>
void Memset(const void* p, uint8_t element_size, StreamOpCall* out) {
  const auto* x = static_cast<const P*>(p);
  out->kind = StreamOpKind::kMemset;
  out->dst = uint64_t(x->dstDevice);
  out->element_size = element_size;
  out->bytes = uint64_t(x->N) * element_size;
  if constexpr (requires { x->uc; }) out->value = x->uc;
  if constexpr (requires { x->us; }) out->value = x->us;
  if constexpr (requires { x->ui; }) out->value = x->ui;
  if constexpr (requires { x->hStream; }) out->stream = x->hStream;
}

}  // namespace

bool IsStreamOpCallback(CUpti_CallbackId cbid) {
  // Decoding reads only the parameter block: zeros stand in for one (every
  // layout above is at most 40 bytes).
  alignas(8) static const uint8_t zeros[64] = {};
  StreamOpCall ignored;
  return DecodeStreamOp(cbid, zeros, &ignored);
}

bool DecodeStreamOp(CUpti_CallbackId cbid, const void* p, StreamOpCall* out) {
  *out = StreamOpCall();
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      out->per_thread = true;
      break;
    default:
      break;
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds:
      Copy<cuMemcpyHtoD_v2_params>(p, StreamOpKind::kCopyHtoD, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
      Copy<cuMemcpyHtoDAsync_v2_params>(p, StreamOpKind::kCopyHtoD, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds:
      Copy<cuMemcpyDtoD_v2_params>(p, StreamOpKind::kCopyDtoD, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
      Copy<cuMemcpyDtoDAsync_v2_params>(p, StreamOpKind::kCopyDtoD, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
      Copy<cuMemcpyDtoH_v2_params>(p, StreamOpKind::kCopyDtoH, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
      Copy<cuMemcpyDtoHAsync_v2_params>(p, StreamOpKind::kCopyDtoH, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
      Copy<cuMemcpy_params>(p, StreamOpKind::kCopyDtoD, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
      Copy<cuMemcpyAsync_params>(p, StreamOpKind::kCopyDtoD, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds:
      Memset<cuMemsetD8_v2_params>(p, 1, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds:
      Memset<cuMemsetD16_v2_params>(p, 2, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds:
      Memset<cuMemsetD32_v2_params>(p, 4, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
      Memset<cuMemsetD8Async_params>(p, 1, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
      Memset<cuMemsetD16Async_params>(p, 2, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
      Memset<cuMemsetD32Async_params>(p, 4, out);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
      const auto* x = static_cast<const cuEventRecord_params*>(p);
      *out = {.kind = StreamOpKind::kEventRecord,
              .stream = x->hStream,
              .per_thread = out->per_thread,
              .event = x->hEvent};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
      const auto* x = static_cast<const cuEventRecordWithFlags_params*>(p);
      *out = {.kind = StreamOpKind::kEventRecord,
              .stream = x->hStream,
              .per_thread = out->per_thread,
              .event = x->hEvent};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
      const auto* x = static_cast<const cuStreamWaitEvent_params*>(p);
      *out = {.kind = StreamOpKind::kStreamWaitEvent,
              .stream = x->hStream,
              .per_thread = out->per_thread,
              .event = x->hEvent};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz: {
      const auto* x = static_cast<const cuStreamSynchronize_params*>(p);
      *out = {
          .kind = StreamOpKind::kStreamSync, .stream = x->hStream, .per_thread = out->per_thread};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize: {
      const auto* x = static_cast<const cuEventSynchronize_params*>(p);
      *out = {.kind = StreamOpKind::kEventSync, .event = x->hEvent};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
      *out = {.kind = StreamOpKind::kContextSync};
      return true;
    default:
      return false;
  }
}

}  // namespace tracesmith::replay_capture
