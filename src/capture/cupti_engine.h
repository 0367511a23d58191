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
#pragma once

#include <cupti.h>

#include <atomic>
#include <bitset>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "activity_converter.h"
#include "buffer_pool.h"
#include "correlation_stacks.h"
#include "driver_calls.h"
#include "memory_recorder.h"
#include "raw_dump.h"
#include "replay_capture.h"
#include "sync_recorder.h"
#include "tracesmith/capture/capture_options.h"
#include "tracesmith/capture/self_cost.h"
#include "tracesmith/capture/session.h"
#include "tracesmith/capture/stacks/stack_collector.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::capture {

class CuptiEngine {
 public:
  static CuptiEngine& Get();

  // Subscribes to CUPTI, opens the output and starts the writer thread.
  // kFailedPrecondition when CUPTI is already in use by another client.
  Status Start(const CaptureOptions& options);
  // Final flush, close. Idempotent; safe to call from atexit.
  Status Stop();
  // Asks the writer thread for a final flush and waits at most `timeout_ms`.
  // Async-signal-tolerant (atomics and nanosleep only); for signal handlers.
  void StopFromSignal(int timeout_ms);
  // Flushes now and waits until the rows are on disk.
  Status FlushNow();
  // After fork() in the child: the parent's capture is not ours to touch.
  void AbandonAfterFork();

  // --kinds memory: device memory in use (cuMemGetInfo: total - free) on
  // every device with a context now, queued as "device memory used
  // (cuMemGetInfo)" counter rows. On the thread that starts or stops the
  // capture (never inside a CUPTI callback); creates no context.
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
  Status SetActivities(bool enable);
  void WriterLoop();
  // One writer cycle: CUPTI flush, stacks, syncs, records, modules, file.
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

  static void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI OnBufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer,
                                         size_t size, size_t valid_size);
  static void CUPTIAPI OnCallback(void* userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void* cbdata);
  // Driver API entry of a call in enter_cbids_: host stack, sync row, cost.
  void OnDriverEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                     const stacks::CallerFrame& from);
  // Driver API exit of a call in exit_cbids_: sync or memory row.
  void OnDriverExit(CUpti_CallbackId cbid, const CUpti_CallbackData* info);
  // The calling thread's stack id (0: none); `timed` adds its phases to `tc`.
  // `from`: the driver's frame that called OnCallback; the walk starts there.
  uint32_t TakeStack(ThreadCost* tc, bool timed, const stacks::CallerFrame& from);
  // Sync and memory rows out of their recorders (every poll); `append`
  // writes them too (every flush).
  void DrainRecorders(bool append);
  // Queues a "device memory used" reading of `device` (any thread).
  void QueueMemoryInUse(uint32_t device_id, uint64_t used_bytes);
  // At a context's creation (resource callback): reads with it pushed.
  void ReadMemoryInUseOf(CUcontext ctx);
  void WritePendingCounters();
  // Writer: driver calls of the last cycle that no runtime call made become
  // driver API rows (all of them when `all`, at the end).
  void WriteDriverCalls(bool all);
  void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data);
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
  std::atomic<uint64_t> flush_requests_{0};
  std::atomic<uint64_t> flushes_done_{0};
  uint64_t start_mono_ns_ = 0;
  uint64_t enabled_mono_ns_ = 0;

  BufferPool pool_;
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
  struct MemoryInUse {
    uint64_t ts_ns, used_bytes;
    uint32_t device_id;
  };
  std::vector<MemoryInUse> memory_in_use_;
  std::atomic<uint64_t> module_loads_{0};

  // Owned by the writer thread after Start().
  std::unique_ptr<format::SbtWriter> sbt_;
  std::unique_ptr<NameSource> live_names_;
  std::unique_ptr<RawDumpWriter> raw_dump_;
  std::unique_ptr<ActivityConverter> converter_;
  std::unique_ptr<RowSink> sink_;
  CorrelationStacks stacks_;
  std::unique_ptr<stacks::StackCollector> collector_;  // null: no stacks or foreign hook
  std::string stack_mode_ = "none";
  // Driver callbacks whose entry records a host stack (work-submitting and,
  // with sync rows, synchronizing calls); replay capture enables others too.
  std::bitset<CUPTI_DRIVER_TRACE_CBID_SIZE> stack_cbids_;
  // Driver callbacks handled by OnDriverEnter, and the cost site of each.
  std::bitset<CUPTI_DRIVER_TRACE_CBID_SIZE> enter_cbids_;
  // Those of enter_cbids_ whose exit makes a row other than a driver API row
  // (OnDriverExit): synchronizing calls (sync rows), VMM and IPC calls
  // (memory rows). Launches, copies and memsets are never in it.
  std::bitset<CUPTI_DRIVER_TRACE_CBID_SIZE> exit_cbids_;
  uint8_t site_of_[CUPTI_DRIVER_TRACE_CBID_SIZE] = {};
  std::unique_ptr<SyncRecorder> sync_;  // --kinds sync (not sync-activity)
  // --kinds memory: stacks at allocation calls, VMM/IPC rows (memory_calls.h).
  std::unique_ptr<MemoryRecorder> memory_;
  bool meminfo_at_context_ = true;  // TRACESMITH_MEMINFO_AT_CONTEXT=0: not at context creation
  // --kinds driver-launch (without the full driver group): driver API rows
  // from callbacks (driver_calls.h) for these callback ids.
  bool driver_rows_ = false;
  bool rewalk_ = false;      // TRACESMITH_STACK_REWALK=1 (engine_stacks.cc)
  bool copy_probe_ = false;  // TRACESMITH_STACK_COPYPROBE=1 (engine_stacks.cc)
  std::bitset<CUPTI_DRIVER_TRACE_CBID_SIZE> driver_row_cbids_;
  std::vector<DriverCall> driver_calls_;            // writer: this cycle's calls
  std::vector<DriverCall> driver_calls_prev_;       // writer: the last cycle's, decided now
  std::vector<model::SyncEvent> pending_syncs_;     // writer: collected, not yet appended
  std::vector<model::MemoryEvent> pending_memory_;  // writer: collected, not yet appended
  uint32_t meminfo_name_id_ = 0;                    // writer: the counter's name
  std::vector<uint32_t> mapping_calls_;             // writer: scratch (CollectMappingCalls)
  TickRate tick_rate_;
  WriterCost writer_cost_;
  std::unique_ptr<ReplayCapturer> replay_;  // --replay-capture
  bool devices_written_ = false;
  uint64_t cupti_dropped_ = 0;
  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> file_bytes_{0};
};

// Monotonic / realtime clocks in ns.
uint64_t MonotonicNs();
uint64_t RealtimeNs();

}  // namespace tracesmith::capture
