// Kineto's names of CUPTI's enums and its host event categories, for the
// Chrome/Kineto JSON export (json_exporter.cc).
#pragma once

#include <cstdint>
#include <string_view>

#include "tracesmith/model/records.h"

namespace tracesmith::exporter {

// Kineto's spellings (CuptiActivityApi / output_base).
inline const char* KinetoMemoryKind(uint8_t kind) {
  switch (kind) {
    case model::kMemPageable:
      return "Pageable";
    case model::kMemPinned:
      return "Pinned";
    case model::kMemDevice:
      return "Device";
    case model::kMemArray:
      return "Array";
    case model::kMemManaged:
      return "Managed";
    case model::kMemDeviceStatic:
      return "Device Static";
    case model::kMemManagedStatic:
      return "Managed Static";
    default:
      return "Unknown";
  }
}
inline const char* KinetoSyncType(uint8_t type) {
  switch (type) {
    case model::kSyncEventSynchronize:
      return "Event Sync";
    case model::kSyncStreamWaitEvent:
      return "Stream Wait Event";
    case model::kSyncStreamSynchronize:
      return "Stream Sync";
    case model::kSyncContextSynchronize:
      return "Context Sync";
    default:
      return "Unknown";
  }
}

// NVTX ranges imported from Kineto keep their category in the domain string.
inline bool IsKinetoHostCategory(std::string_view cat) {
  return cat == "cpu_op" || cat == "user_annotation" || cat == "python_function" ||
         cat == "gpu_user_annotation" || cat == "Trace" || cat == "cuda_profiler_range" ||
         cat == "fwdbwd" || cat == "overhead";
}

}  // namespace tracesmith::exporter
