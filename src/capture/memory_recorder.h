// MemoryRecorder: the memory rows CUPTI's MEMORY2 activity does not make
// (virtual memory management and IPC imports, memory_calls.h), from driver
// API callbacks at the call's entry (CUPTI timestamp, correlation id, host
// stack) and its successful exit (the parameters, out-pointers included).
//
// Threads: OnEnter/OnExit on the application thread inside the CUDA call
// (no lock, no allocation past a thread's first row); rows go through a
// per-thread ring to the writer (Collect), like the sync rows.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <vector>

#include "tracesmith/model/records.h"

namespace tracesmith::capture {

class MemoryRecorder {
 public:
  explicit MemoryRecorder(uint32_t pid) : pid_(pid) {}

  // Application thread, at the entry and exit of a kRow call (memory_calls.h).
  // The entry of cuMemMap/cuMemUnmap also notes the call's correlation id for
  // CollectMappingCalls (before CUPTI can write a record of the call).
  void OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info, uint32_t stack_id);
  void OnExit(CUpti_CallbackId cbid, const CUpti_CallbackData* info);

  // Writer thread: moves finished rows out of the threads' rings.
  void Collect(std::vector<model::MemoryEvent>* out);
  static uint64_t dropped();
  // Writer thread: the correlation ids of the cuMemMap/cuMemUnmap calls
  // entered since the last call (ActivityConverter::NoteMappingCall). Call
  // after taking the completed CUPTI buffers to convert: every record in
  // them was written after its call's entry, hence after the id was noted.
  static void CollectMappingCalls(std::vector<uint32_t>* out);
  // The same for IPC open/close calls (ActivityConverter::NoteImportCall).
  static void CollectImportCalls(std::vector<uint32_t>* out);

 private:
  uint32_t pid_;
};

}  // namespace tracesmith::capture
