// MemoryRecorder (`--kinds memory`): what the capture adds to CUPTI's
// MEMORY2 rows, from driver API callbacks (memory_calls.h), and the
// "device memory used (cuMemGetInfo)" counter.
//
//  - Allocation and free calls (kStackOnly): with stacks on, the engine
//    takes the host stack at their entry (joined to the MEMORY2 row by
//    correlation id); the recorder itself does nothing there.
//  - Virtual memory management and IPC calls (kRow): rows made from the
//    call's entry (CUPTI timestamp, correlation id, host stack) and its
//    successful exit (the parameters, out-pointers included). The entry of
//    cuMemMap/Unmap and of IPC open/close also notes the call's correlation
//    id, so that the converter drops MEMORY2's records of those calls
//    (BeforeActivityBuffers).
//  - Device memory in use (total - free) on every device with a context, at
//    a context's creation (TRACESMITH_MEMINFO_AT_CONTEXT=0: not there) and
//    at the capture's edges (OnCaptureEdge: an in-process capture's start,
//    every capture's stop), as counter rows.
//
// Threads: OnEnter/OnExit on the application thread inside the CUDA call
// (no lock, no allocation past a thread's first row); rows go through a
// per-thread ring to the writer (Collect), like the sync rows. Counter
// readings are queued under a mutex (rare).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "tracesmith/capture/recorder.h"
#include "tracesmith/model/records.h"

namespace tracesmith::capture {

class MemoryRecorder final : public Recorder {
 public:
  MemoryRecorder(uint32_t pid, bool meminfo_at_context)
      : pid_(pid), meminfo_at_context_(meminfo_at_context) {}

  // Application thread, at the entry and exit of a kRow call (memory_calls.h).
  // The entry of cuMemMap/cuMemUnmap also notes the call's correlation id for
  // CollectMappingCalls (before CUPTI can write a record of the call).
  void OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info, uint32_t stack_id);
  void OnExit(CUpti_CallbackId cbid, const CUpti_CallbackData* info);
  static uint64_t dropped();
  // Writer thread: the correlation ids of the cuMemMap/cuMemUnmap calls
  // entered since the last call (ActivityConverter::NoteMappingCall). Call
  // after taking the completed CUPTI buffers to convert: every record in
  // them was written after its call's entry, hence after the id was noted.
  static void CollectMappingCalls(std::vector<uint32_t>* out);
  // The same for IPC open/close calls (ActivityConverter::NoteImportCall).
  static void CollectImportCalls(std::vector<uint32_t>* out);

  // Recorder.
  const char* name() const override { return "memory"; }
  void Claim(CallbackClaims& claims) override;
  void OnDriverCall(const DriverCallEvent& call) override;
  // At a context's creation: a reading with it pushed.
  void OnContextCreated(CUcontext ctx) override;
  // Every device with a context now (creates none): the current context's
  // device, and the others through their primary context when it is active.
  void OnCaptureEdge() override;
  void Collect() override;
  void Write(format::SbtWriter& sbt, bool final) override;
  void BeforeActivityBuffers(ActivityConverter& converter) override;
  // The counter rows of the readings queued since the last flush.
  void AfterActivityBuffers(format::SbtWriter& sbt, bool final) override;
  void WriteStats(StatSink& stats) override;

 private:
  // Queues a "device memory used" reading of `device` (any thread).
  void QueueMemoryInUse(uint32_t device_id, uint64_t used_bytes);

  const uint32_t pid_;
  const bool meminfo_at_context_;
  std::vector<model::MemoryEvent> pending_;  // writer: collected, not yet written
  std::vector<uint32_t> calls_;              // writer: scratch (CollectMappingCalls)
  uint32_t meminfo_name_id_ = 0;             // writer: the counter's name
  struct MemoryInUse {
    uint64_t ts_ns, used_bytes;
    uint32_t device_id;
  };
  std::mutex readings_mu_;
  std::vector<MemoryInUse> readings_;
};

}  // namespace tracesmith::capture
