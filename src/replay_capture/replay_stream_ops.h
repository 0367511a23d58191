// Decoding of the driver calls that range replay re-issues between recorded
// launches: copies, memsets, event record/wait and synchronizations (what
// they do, on which stream, with which event). Used by ReplayCapturer.
// CUDA/CUPTI headers only (no driver calls): unit-tested on any machine.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstdint>

#include "tracesmith/format/replay_payload.h"

namespace tracesmith::replay_capture {

struct StreamOpCall {
  format::StreamOpKind kind = format::StreamOpKind::kContextSync;
  // A generic cuMemcpy(Async): kind is decided from the pointers (CopyKind).
  bool generic_copy = false;
  CUstream stream = nullptr;
  bool per_thread = false;  // a _ptsz/_ptds entry point: NULL is the per-thread stream
  CUevent event = nullptr;
  uint64_t dst = 0, src = 0, bytes = 0;
  const void* host_src = nullptr;  // the host bytes of an HtoD copy
  uint32_t value = 0;              // memset
  uint8_t element_size = 0;        // memset: 1, 2 or 4
};

// True for the driver callbacks DecodeStreamOp understands.
bool IsStreamOpCallback(CUpti_CallbackId cbid);
// Decodes a driver callback's parameters; false for other callbacks.
bool DecodeStreamOp(CUpti_CallbackId cbid, const void* params, StreamOpCall* out);

}  // namespace tracesmith::replay_capture
