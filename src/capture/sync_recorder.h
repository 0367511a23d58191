// SyncRecorder: synchronization rows (stream/event/context synchronize,
// stream wait event) from driver API callbacks at the call's entry and exit.
//
// Why not CUPTI's SYNCHRONIZATION activity: while it is enabled CUPTI
// intercepts every CUDA call, not only the synchronizing ones, which costs
// 0.2-0.4 us per call (cudaGetDevice 42 -> 396 ns on an H100, 2026-11-24;
// docs/benchmarks.md); PyTorch makes several such calls per operator. A
// callback enabled for a handful of callback ids costs nothing elsewhere.
// The rows carry what the activity record carried (type, context, device,
// stream, event, entry/exit time in CUPTI's clock, correlation id) plus the
// calling thread and its host stack.
//
// Threads: OnEnter/OnExit run on the application thread inside the CUDA
// call (a short lock maps an event handle to its id; synchronizing calls
// are rare); rows go through a per-thread ring to the writer (Collect),
// which appends them before each flush's CUPTI records (Write).
//
// A recorder (recorder.h): `--kinds sync` without `sync-activity`.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tracesmith/capture/recorder.h"
#include "tracesmith/model/records.h"

namespace tracesmith::capture {

class SyncRecorder final : public Recorder {
 public:
  explicit SyncRecorder(uint32_t pid) : pid_(pid) {}

  // model::SyncType of a driver callback id; kSyncUnknown for other calls.
  static model::SyncType TypeOf(CUpti_CallbackId cbid);

  // Application thread, at the API entry and exit of a call TypeOf names.
  void OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info, uint32_t stack_id);
  void OnExit(CUpti_CallbackId cbid, const CUpti_CallbackData* info);
  static uint64_t dropped();

  // Recorder: the calls TypeOf names, entry (when recording) and exit,
  // timed at the `sync` cost site, with the host stack.
  const char* name() const override { return "sync"; }
  void Claim(CallbackClaims& claims) override;
  void OnDriverCall(const DriverCallEvent& call) override;
  void Collect() override;
  void Write(format::SbtWriter& sbt, bool final) override;
  void WriteStats(StatSink& stats) override;

 private:
  uint32_t EventId(CUevent event);

  uint32_t pid_;
  std::mutex events_mu_;
  std::unordered_map<CUevent, uint32_t> event_ids_;
  std::vector<model::SyncEvent> pending_;  // writer: collected, not yet written
};

}  // namespace tracesmith::capture
