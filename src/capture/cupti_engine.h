// CuptiEngine: the one CUPTI client of a process (CUPTI allows one subscriber).
//
// Threads:
//  - application threads: CUPTI callbacks (buffer requests, launch-entry
//    stack hook, module loads, capture-range triggers). No locks or
//    allocation on the per-launch path; rare events (module loads, buffer
//    requests) take a short mutex.
//  - CUPTI's own thread or the flushing thread: buffer-completed callbacks,
//    which only queue the buffer.
//  - the writer thread (owned here): every flush period it calls
//    cuptiActivityFlushAll, converts queued buffers (ActivityConverter),
//    appends rows to the SbtWriter and flushes chunks to disk, so a killed
//    process leaves a trace readable up to the last period.
// Stop requests are plain atomics polled by the writer every few ms, so a
// signal handler can request a final flush (see injection.cc).
//
// Sources of rows beyond the CUPTI activity records are recorders
// (recorder.h; the caller of Start names the function that makes them:
// session/recorders.cc): the engine routes the callbacks
// they claim to them through one table entry per driver callback id, and
// calls their writer hooks in each flush. What stays here is what every
// capture has: activity buffers and their conversion, host stacks, the
// driver API rows of work-submitting calls, module rows, metadata, clock
// anchors, drops and the capture's cost.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "buffer_pool.h"
#include "correlation_stacks.h"
#include "driver_calls.h"
#include "raw_dump.h"
#include "tracesmith/capture/activity_converter.h"
#include "tracesmith/capture/capture_cost.h"
#include "tracesmith/capture/capture_options.h"
#include "tracesmith/capture/engine.h"
#include "tracesmith/capture/recorder.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/launch_rank.h"
#include "tracesmith/stacks/stack_collector.h"

namespace tracesmith::capture {

class CuptiEngine {
 public:
  static CuptiEngine& Get();

  // Subscribes to CUPTI, opens the output and starts the writer thread with
  // the recorders `make_recorders` gives. kFailedPrecondition when CUPTI is
  // already in use by another client.
  Status Start(const CaptureOptions& options, MakeRecordersFn make_recorders);
  // Final flush, close. Idempotent; safe to call from atexit.
  Status Stop();
  // Asks the writer thread for a final flush and waits at most `timeout_ms`.
  // Async-signal-tolerant (atomics and nanosleep only); for signal handlers.
  void StopFromSignal(int timeout_ms);
  // Flushes now and waits until the rows are on disk.
  Status FlushNow();
  // After fork() in the child: the parent's capture is not ours to touch.
  void AbandonAfterFork();

  // The recorders' readings at the capture's edges (Recorder::OnCaptureEdge;
  // --kinds memory: device memory in use, cuMemGetInfo, on every device with
  // a context now, as "device memory used (cuMemGetInfo)" counter rows). On
  // the thread that starts or stops the capture (never inside a CUPTI
  // callback); creates no context.
  void RecordDeviceMemoryUsed();

  bool running() const { return running_.load(); }
  std::string output_path() const { return output_path_; }
  CaptureStats stats() const;

 private:
  CuptiEngine() = default;
  Status OpenOutput(const CaptureOptions& options);
  Status EnableCallbacks();
  // Creates the stack collector and installs its hook (--stacks), unless a
  // hook is already set (tests) or stacks are off.
  void StartStacks();
  void StopStacks();
  void DrainStacks();
  // Writer thread: first-time work of the stacks done ahead, off the program's
  // threads (PrepareModules, PrepareWalkMemos; engine_stacks.cc).
  void PrepareStackModules();
  Status SetActivities(bool enable);
  void WriterLoop();
  // One writer cycle: CUPTI flush, stacks, recorders' rows (Write), CUPTI
  // records, driver API rows, recorders' later rows, modules, file.
  // `forced` (the last one): incomplete CUPTI buffers too, pool closed.
  void FlushOnce(bool forced);
  void ProcessCompletedBuffers();
  void WriteRecordsOfBuffer(uint8_t* buffer, size_t valid);
  void WriteMetadataAtStart();
  void TryWriteDevices();
  void WritePendingModules();
  void CheckDrops();
  void WriteClockAnchor(uint8_t phase);
  void WriteFinalStats();
  void Finalize();
  // Every recorder's BeforeCaptureEnd, once (writer thread).
  void EndRecorders();
  // A recorder asked to end the program (Recorder::EndProgramStatus): the
  // trace written and closed without CUPTI's teardown (bounded by a timer),
  // then _exit(status).
  [[noreturn]] void EndProgram(int status);

  static void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI OnBufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer,
                                         size_t size, size_t valid_size);
  static void CUPTIAPI OnCallback(void* userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void* cbdata);
  // Driver API entry of a call on the timed path: cost, host stack, the
  // recorders of route.entry, the driver API row.
  void OnDriverEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info, DriverRoute route,
                     const stacks::CallerFrame& from);
  // Driver API exit of a call some recorder claimed the exit of (route.exit).
  void OnDriverExit(CUpti_CallbackId cbid, const CUpti_CallbackData* info, DriverRoute route);
  // Gives the call to the recorders of `recorders` (bit i: recorder_at_[i]).
  void Deliver(uint8_t recorders, CUpti_CallbackId cbid, const CUpti_CallbackData* info,
               uint32_t stack_id, bool entry);
  // The calling thread's stack id (0: none); `timed` adds its phases to `tc`.
  // `from`: the driver's frame that called OnCallback; the walk starts there.
  uint32_t TakeStack(ThreadCost* tc, bool timed, const stacks::CallerFrame& from);
  // Writer: driver calls of the last cycle that no runtime call made become
  // driver API rows (all of them when `all`, at the end).
  void WriteDriverCalls(bool all);
  void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data);
  // The graph resource callbacks (recorders that claimed GraphNodes): a
  // node made outside cudaGraphInstantiate gets the calling thread's stack.
  void OnGraphResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data,
                       const stacks::CallerFrame& from);
  void OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data);

  CaptureOptions options_;
  std::string output_path_;
  uint32_t pid_ = 0;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::atomic<bool> running_{false};
  std::atomic<bool> abandoned_{false};
  std::atomic<bool> activities_on_{false};
  std::atomic<bool> range_done_{false};  // --duration elapsed: never re-enable
  std::mutex stop_mu_;                   // serializes Stop() callers (atexit vs Session)
  std::mutex activity_mu_;               // serializes enabling/disabling activity kinds

  // Writer thread control (atomics only: signal handlers set them).
  std::thread writer_;
  std::atomic<uint64_t> writer_tid_{0};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> writer_done_{false};
  bool recorders_ended_ = false;  // EndRecorders ran (writer thread)
  std::atomic<uint64_t> flush_requests_{0};
  std::atomic<uint64_t> flushes_done_{0};
  uint64_t start_mono_ns_ = 0;
  uint64_t enabled_mono_ns_ = 0;

  model::LaunchRank launch_;  // this process's place in a job (OpenOutput)
  BufferPool pool_;
  bool zeroed_buffers_ = false;  // CUPTI told our buffers come zeroed
  bool writer_batch_ = false;    // the writer runs under SCHED_BATCH (background_thread.h)
  std::mutex completed_mu_;
  struct Completed {
    uint8_t* buffer;
    size_t valid;
  };
  std::vector<Completed> completed_;

  // Rare events queued by callbacks for the writer.
  std::mutex events_mu_;
  std::vector<model::ModuleLoadEvent> modules_;
  std::vector<CUcontext> contexts_;
  std::atomic<uint64_t> module_loads_{0};

  // Made at Start (recorders.cc); recorder_at_[i] is the i-th, bit i of the
  // masks in table_.
  std::vector<std::unique_ptr<Recorder>> recorders_;
  Recorder* recorder_at_[kMaxRecorders] = {};
  // Per driver callback id: the engine's timed path (work-submitting calls:
  // host stack, driver API row; recorders' timed claims) and the recorders
  // called on it and after it. Filled by EnableCallbacks.
  CallbackTable table_;

  // Owned by the writer thread after Start().
  std::unique_ptr<format::SbtWriter> sbt_;
  std::unique_ptr<NameSource> live_names_;
  std::unique_ptr<RawDumpWriter> raw_dump_;
  std::unique_ptr<ActivityConverter> converter_;
  std::unique_ptr<RowSink> sink_;
  CorrelationStacks stacks_;
  std::unique_ptr<stacks::StackCollector> collector_;  // null: no stacks or foreign hook
  std::string stack_mode_ = "none";
  // --kinds driver-launch (without the full driver group): driver API rows
  // from callbacks (driver_calls.h) of the work-submitting calls
  // (DriverRoute::kDriverRow).
  bool driver_rows_ = false;
  std::vector<DriverCall> driver_calls_;       // writer: this cycle's calls
  std::vector<DriverCall> driver_calls_prev_;  // writer: the last cycle's, decided now
  TickRate tick_rate_;
  WriterCost writer_cost_;
  bool devices_written_ = false;
  uint64_t cupti_dropped_ = 0;
  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> file_bytes_{0};
};

// Monotonic / realtime clocks in ns.
uint64_t MonotonicNs();
uint64_t RealtimeNs();

}  // namespace tracesmith::capture
