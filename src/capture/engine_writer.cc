// CuptiEngine, writer side: the background thread that drains CUPTI buffers
// into the SBT file, metadata rows, and stopping.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "cupti_engine.h"
#include "tracesmith/base/clock.h"
#include "tracesmith/capture/background_thread.h"
#include "tracesmith/capture/device_query.h"
#include "tracesmith/cuda/call.h"
#include "tracesmith/model/launch_rank.h"
#include "tracesmith/stacks/unwinder.h"

namespace tracesmith::capture {
namespace {

// Writer polling period: stop and flush requests are atomics (signal
// handlers set them), so the thread checks them this often.
constexpr long kPollNs = 5 * 1000 * 1000;
// EndProgram's bound on the final flush (a hung GPU may block CUPTI's).
constexpr std::chrono::seconds kEndProgramGrace{10};  // said in the message below

uint64_t ThreadCpuNs() { return ClockNs(CLOCK_THREAD_CPUTIME_ID); }

void SleepNs(long ns) {
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

std::string ReadSmallFile(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

void CuptiEngine::WriteClockAnchor(uint8_t phase) {
  model::ClockAnchor a;
  // Both host clocks are read on each side of the capture clock, and the
  // monotonic reads bracket everything: the instant gpu_ns names lies
  // within +-read_window_ns/2 of both midpoints (the bound job/job_clock.h
  // states for ranks on one host).
  const uint64_t before = MonotonicNs();
  const uint64_t real_before = RealtimeNs();
  uint64_t gpu = 0;
  cuptiGetTimestamp(&gpu);
  const uint64_t real_after = RealtimeNs();
  const uint64_t after = MonotonicNs();
  a.gpu_ns = gpu;
  a.monotonic_ns = before + (after - before) / 2;
  // CLOCK_REALTIME may be stepped between the two reads: then the later one.
  a.realtime_ns =
      real_after >= real_before ? real_before + (real_after - real_before) / 2 : real_after;
  a.read_window_ns = after - before;
  a.pid = pid_;
  a.phase = phase;
  sbt_->Append(a);
}

void CuptiEngine::WriteMetadataAtStart() {
  WriteClockAnchor(model::kClockStart);
  auto meta = [&](const char* key, const std::string& value) {
    model::MetadataEntry m;
    m.key_id = sbt_->InternString(key);
    m.value_id = sbt_->InternString(value);
    m.pid = pid_;
    sbt_->Append(m);
  };
  meta("capture.tool", "tracesmith-inject");
  meta("capture.kinds", KindsToString(options_.groups));
  meta("capture.buffer_mb", std::to_string(options_.buffer_mb));
  meta("capture.flush_ms", std::to_string(options_.flush_ms));
  meta("capture.clock", "cupti");  // timestamps are CUPTI ns; see clock anchors
  meta("capture.stacks", stack_mode_);
  if (options_.range == CaptureRange::kCudaProfilerApi) meta("capture.range", "cudaProfilerApi");
  if (options_.range == CaptureRange::kNvtx) meta("capture.range", "nvtx:" + options_.range_name);
  // The job this process is a rank of, as its launcher said (torchrun, mpirun, srun...).
  if (launch_.rank >= 0) meta(model::kRankFromKey, launch_.rank_from);
  if (launch_.world_size >= 0) meta(model::kWorldSizeKey, std::to_string(launch_.world_size));
  if (launch_.local_rank >= 0) meta(model::kLocalRankKey, std::to_string(launch_.local_rank));
}

void CuptiEngine::TryWriteDevices() {
  auto info = QueryDevices(/*init=*/false);
  if (!info.ok() || info->devices.empty()) return;  // cuInit not finished yet: next period
  devices_written_ = true;
  for (const DeviceInfo& d : info->devices) {
    model::Device r;
    r.device_id = d.ordinal;
    r.pid = pid_;
    r.name_id = sbt_->InternString(d.name);
    r.uuid_id = sbt_->InternString(d.uuid);
    r.sm_count = d.sm_count;
    r.cc_major = d.cc_major;
    r.cc_minor = d.cc_minor;
    r.memory_bytes = d.memory_bytes;
    r.core_clock_khz = d.core_clock_khz;
    r.memory_clock_khz = d.memory_clock_khz;
    r.memory_bus_width_bits = d.memory_bus_width_bits;
    r.l2_cache_bytes = d.l2_cache_bytes;
    r.max_threads_per_block = d.max_threads_per_block;
    r.max_shared_per_block = d.max_shared_per_block;
    r.max_registers_per_block = d.max_registers_per_block;
    r.pci_bus_id = d.pci_bus_id;
    sbt_->Append(r);
  }
  model::Process p;
  p.pid = pid_;
  p.parent_pid = static_cast<uint32_t>(getppid());
  std::string comm = ReadSmallFile("/proc/self/comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  p.name_id = sbt_->InternString(comm);
  std::string cmdline = ReadSmallFile("/proc/self/cmdline");
  for (char& c : cmdline)
    if (c == '\0') c = ' ';
  while (!cmdline.empty() && cmdline.back() == ' ') cmdline.pop_back();
  p.cmdline_id = sbt_->InternString(cmdline);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  p.hostname_id = sbt_->InternString(host);
  p.rank = launch_.rank;
  p.start_ns = 0;
  p.driver_version = static_cast<uint32_t>(info->driver_version);
  // cuInit has returned (the devices above were found without it), so a
  // runtime the program loads dynamically is there by now.
  p.runtime_version = QueryLoadedRuntimeVersion();
  uint32_t cupti = 0;
  cuptiGetVersion(&cupti);
  p.cupti_version = cupti;
  sbt_->Append(p);
}

void CuptiEngine::WritePendingModules() {
  std::vector<model::ModuleLoadEvent> modules;
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    modules.swap(modules_);
  }
  for (const auto& m : modules) {
    sbt_->Append(m);
    // Kernel name pointers of an unloaded module may be reused.
    if (m.op == model::kModuleUnloaded) converter_->ClearStringCache();
  }
}

void CuptiEngine::CheckDrops() {
  std::vector<CUcontext> contexts;
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    contexts = contexts_;
  }
  size_t dropped = 0, n = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &n) == CUPTI_SUCCESS) dropped += n;
  for (CUcontext c : contexts) {
    n = 0;
    if (cuptiActivityGetNumDroppedRecords(c, 0, &n) == CUPTI_SUCCESS) dropped += n;
  }
  if (dropped == 0) return;
  cupti_dropped_ += dropped;
  model::DropEvent d;
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);
  d.ts_ns = ts;
  d.count = dropped;
  d.pid = pid_;
  d.reason = pool_.refused() ? model::kDropBufferCap : model::kDropCupti;
  sbt_->Append(d);
}

void CuptiEngine::WriteRecordsOfBuffer(uint8_t* buffer, size_t valid) {
  CUpti_Activity* record = nullptr;
  CUpti_Activity* prev = nullptr;
  uint64_t count = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (raw_dump_ && prev)
      raw_dump_->WriteRecord(prev,
                             reinterpret_cast<uint8_t*>(record) - reinterpret_cast<uint8_t*>(prev));
    converter_->Convert(record);
    prev = record;
    ++count;
  }
  if (raw_dump_ && prev)
    raw_dump_->WriteRecord(prev,
                           static_cast<size_t>(buffer + valid - reinterpret_cast<uint8_t*>(prev)));
  records_.fetch_add(count, std::memory_order_relaxed);
}

void CuptiEngine::ProcessCompletedBuffers() {
  std::vector<Completed> batch;
  {
    std::lock_guard<std::mutex> lock(completed_mu_);
    batch.swap(completed_);
  }
  // After taking the batch: what the recorders noted at calls' entries
  // (MemoryRecorder: mapping and IPC calls) was noted before CUPTI wrote
  // any record of the batch about those calls.
  for (const auto& r : recorders_) r->BeforeActivityBuffers(*converter_);
  for (const Completed& c : batch) {
    WriteRecordsOfBuffer(c.buffer, c.valid);
    pool_.Release(c.buffer);
  }
}

void CuptiEngine::WriteDriverCalls(bool all) {
  if (!driver_rows_) return;
  auto write = [this](const DriverCall& c) {
    if (converter_->IsRuntimeCall(c.correlation_id)) return;  // made by the runtime
    CUpti_ActivityAPI r{};
    r.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    r.cbid = c.cbid;
    r.start = c.start_ns;
    r.end = c.end_ns;
    r.processId = pid_;
    r.threadId = c.tid;
    r.correlationId = c.correlation_id;
    r.returnValue = uint32_t(c.result);
    converter_->Convert(reinterpret_cast<const CUpti_Activity*>(&r));
  };
  for (const DriverCall& c : driver_calls_prev_) write(c);
  driver_calls_prev_.clear();
  if (all) {
    for (const DriverCall& c : driver_calls_) write(c);
    driver_calls_.clear();
  } else {
    driver_calls_prev_.swap(driver_calls_);
  }
  converter_->NextCycle();
}

void CuptiEngine::WriterLoop() {
  writer_tid_ = static_cast<uint64_t>(syscall(SYS_gettid));
  writer_batch_ = RunAsBackgroundThread(options_.tuning.batch_threads);
  uint64_t next_flush = MonotonicNs() + uint64_t{options_.flush_ms} * 1000000;
  uint64_t served = flush_requests_.load();
  pool_.Refill();  // before the program's first buffer request, if the writer wins the race
  // Unwind tables faulted in and modules registered here, not on the first
  // launch through each module (StackCollector::PrepareModules); counted in
  // the drain phase's CPU.
  uint64_t p0 = ThreadCpuNs();
  PrepareStackModules();
  writer_cost_.drain_ns += ThreadCpuNs() - p0;
  while (!stop_requested_.load()) {
    SleepNs(kPollNs);
    if (abandoned_.load()) return;
    pool_.Refill();  // buffers ready, touched here rather than on the program's threads
    // Every poll, not every flush: the per-thread rings hold ~40 ms of
    // launches at 400k/s (CorrelationStacks::kRingSize) and 1024 syncs.
    uint64_t c0 = ThreadCpuNs();
    PrepareStackModules();  // modules loaded since the last poll
    stacks_.Drain();
    for (const auto& r : recorders_) r->Collect();
    for (const auto& r : recorders_)
      if (int status = r->EndProgramStatus()) EndProgram(status);  // does not return
    if (driver_rows_) DriverCalls::Collect(&driver_calls_);
    writer_cost_.drain_ns += ThreadCpuNs() - c0;
    uint64_t now = MonotonicNs();
    if (!activities_on_.load() && !range_done_.load() && options_.range == CaptureRange::kAll &&
        options_.delay_ns && now - start_mono_ns_ >= options_.delay_ns) {
      (void)SetActivities(true);
    }
    if (activities_on_.load() && options_.duration_ns &&
        now - enabled_mono_ns_ >= options_.duration_ns) {
      range_done_ = true;
      EndRecorders();
      (void)SetActivities(false);
      flush_requests_.fetch_add(1);
    }
    uint64_t requests = flush_requests_.load();
    if (now < next_flush && requests == served) continue;
    served = requests;
    FlushOnce(/*forced=*/false);
    flushes_done_.store(requests);
    next_flush = MonotonicNs() + uint64_t{options_.flush_ms} * 1000000;
  }
  Finalize();
  writer_done_ = true;
}

void CuptiEngine::WriteFinalStats() {
  StatSink stats(sbt_.get(), pid_);
  const ConverterStats& cs = converter_->stats();
  stats.Add("capture.cupti_records", cs.records);
  stats.Add("capture.cupti_dropped_records", cupti_dropped_, model::kStatDataLoss);
  stats.Add("capture.buffer_requests_refused", pool_.refused(), model::kStatDataLoss);
  stats.Add("capture.buffer_bytes_allocated", pool_.allocated_bytes());
  stats.Add("capture.buffer_bytes", pool_.buffer_bytes());
  stats.Add("capture.buffers_allocated_on_request", pool_.allocated_on_request());
  stats.Add("capture.buffers_zeroed_by_tracesmith", zeroed_buffers_ ? 1 : 0);
  stats.Add("capture.writer_sched_batch", writer_batch_ ? 1 : 0);
  stats.Add("capture.unconverted_records", cs.unknown_kind, model::kStatWarning);
  // MEMORY2 records of cuMemMap/Unmap are told apart with the memory
  // recorder's notes (MakeMemoryRecorder's condition).
  if (subscriber_ && (options_.groups & kGroupMemory))
    stats.Add("capture.cupti_vmm_memory_records_dropped", cs.vmm_memory_records);
  stats.Add("capture.cupti_ipc_memory_records_dropped", cs.ipc_memory_records);
  stats.Add("capture.nvtx_unclosed_ranges", cs.nvtx_unclosed, model::kStatWarning);
  stats.Add("capture.nvtx_unmatched_range_ends", cs.nvtx_unmatched_end, model::kStatWarning);
  stats.Add("capture.stack_ring_overflows", CorrelationStacks::dropped(), model::kStatDataLoss);
  stats.Add("capture.module_loads", module_loads_.load());
  stats.Add("capture.driver_call_ring_overflows", DriverCalls::dropped(), model::kStatDataLoss);
  for (const auto& r : recorders_) r->WriteStats(stats);  // in recorders.cc's order
  writer_cost_.total_ns = ThreadCpuNs();
  for (const CostStat& c : CollectCostStats(tick_rate_.NsPerTick(), writer_cost_))
    stats.Add(c.name.c_str(), c.value);
  if (collector_) {
    stacks::StackCollectorStats ss = collector_->stats();
    stats.Add("capture.stacks_distinct", ss.new_stacks);
    stats.Add("capture.stack_frames", ss.frames);
    stats.Add("capture.stack_unknown_module_frames", ss.unknown_module, model::kStatWarning);
    // First-time work done on the writer, ahead (PrepareModules): modules,
    // bytes of unwind tables faulted in, CPU time (in the drain phase's).
    stats.Add("capture.stacks_modules_prepared", ss.modules_prepared);
    stats.Add("capture.stacks_unwind_bytes_prepared", ss.unwind_bytes_prepared);
    stats.Add("capture.stacks_prepare_cpu_ns", ss.prepare_cpu_ns);
    stats.Add("capture.stacks_tables_grown_ahead", ss.tables_grown);
    // Deferred interning (stack_collector.h): stacks the writer interned, Python frames
    // described on a launching thread without the GIL, code objects kept alive for the writer
    // to describe, rows that named a stack before its poll's drain.
    stats.Add("capture.stacks_deferred", ss.deferred);
    stats.Add("capture.stacks_python_frames_described_on_thread", ss.described_without_gil);
    stats.Add("capture.stacks_pinned_code_objects", ss.pinned_code_objects);
    stats.Add("capture.stacks_resolved_on_append", ss.resolved_on_append);
    stats.Add("capture.stacks_python_frames_after_exit", ss.python_frames_after_exit);
    // Deferred walks: finished by the writer from a copy of the stack, finished on their thread
    // for want of room, under Python with their copy too short (outer native frames missing).
    stats.Add("capture.stacks_walks_deferred", ss.walks_deferred);
    stats.Add("capture.stacks_walks_finished_on_thread", ss.walks_finished_on_thread);
    stats.Add("capture.stacks_walks_cut", ss.walks_cut);
    stats.Add("capture.stacks_walk_copy_bytes_read_max", ss.walk_bytes_read_max);
    const stacks::UnwindStats us = stacks::GetUnwindStats();
    stats.Add("capture.stacks_fde_indexes", us.fde_indexes);
    stats.Add("capture.stacks_fde_index_bytes", us.fde_index_bytes);
    stats.Add("capture.stacks_rules_narrowed", us.rules_narrowed);
    stats.Add("capture.stacks_bounds_from_maps", us.bounds_from_maps);
    const stacks::WalkMemoCounts memos = stacks::GetWalkMemoCounts();
    stats.Add("capture.stacks_memos_prepared_taken", memos.taken_ready);
    stats.Add("capture.stacks_memos_mapped_by_thread", memos.mapped_here);
    // The per-thread walk memo (walk_memo.h): stacks replayed whole, in
    // part or unwound, and frames replayed vs unwound with rules.
    stats.Add("capture.cost.stack.memo_hits", us.memo_hits);
    stats.Add("capture.cost.stack.memo_partial", us.memo_partial);
    stats.Add("capture.cost.stack.memo_misses", us.memo_misses);
    stats.Add("capture.cost.stack.memo_frames_replayed", us.memo_frames_replayed);
    stats.Add("capture.cost.stack.memo_frames_walked", us.memo_frames_walked);
  }
}

void CuptiEngine::FlushOnce(bool forced) {
  uint64_t c0 = ThreadCpuNs();
  cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  uint64_t c1 = ThreadCpuNs();
  // Rows that go before this flush's CUPTI records: collected first, so that
  // every stack they name was made before the stacks are drained (a stack
  // node row precedes the rows that name it).
  for (const auto& r : recorders_) r->Collect();
  DrainStacks();
  for (const auto& r : recorders_) r->Write(*sbt_, forced);
  uint64_t c2 = ThreadCpuNs();
  ProcessCompletedBuffers();
  if (driver_rows_) {
    DriverCalls::Collect(&driver_calls_);
    WriteDriverCalls(/*all=*/forced);
  }
  uint64_t c3 = ThreadCpuNs();
  // Replay payloads, counters: after the records.
  for (const auto& r : recorders_) r->AfterActivityBuffers(*sbt_, forced);
  if (forced) pool_.Close();
  WritePendingModules();
  if (!devices_written_) TryWriteDevices();
  CheckDrops();
  if (!forced) (void)sbt_->Flush();
  file_bytes_ = sbt_->stats().bytes;
  uint64_t c4 = ThreadCpuNs();
  writer_cost_.flush_ns += c1 - c0;
  writer_cost_.drain_ns += c2 - c1;
  writer_cost_.convert_ns += c3 - c2;
  writer_cost_.write_ns += c4 - c3;
}

void CuptiEngine::EndRecorders() {
  if (recorders_ended_) return;
  recorders_ended_ = true;
  for (const auto& r : recorders_) r->BeforeCaptureEnd();
}

void CuptiEngine::Finalize() {
  EndRecorders();
  (void)SetActivities(false);
  FlushOnce(/*forced=*/true);
  converter_->Finish();
  WriteFinalStats();
  WriteClockAnchor(model::kClockEnd);
  Status st = sbt_->Close();
  file_bytes_ = sbt_->stats().bytes;
  if (!st.ok()) std::fprintf(stderr, "tracesmith: error: %s\n", st.ToString().c_str());
  raw_dump_.reset();
}

void CuptiEngine::EndProgram(int status) {
  // What the recorders hold goes to the file first, and the file to the disk
  // (a chunk flush): the trace is readable from here on. Then the stats and
  // the footer, without CUPTI's teardown: disabling activities or sampling
  // waits for the kernel that never ends (seen on the H200: > 10 s). A timer
  // ends the program whatever happens.
  std::thread([status] {
    std::this_thread::sleep_for(kEndProgramGrace);
    std::fprintf(stderr, "tracesmith: the trace was not closed within 10 s; ending the program\n");
    _exit(status);
  }).detach();
  FlushOnce(/*forced=*/false);
  WriteFinalStats();
  WriteClockAnchor(model::kClockEnd);
  if (Status st = sbt_->Close(); !st.ok())
    std::fprintf(stderr, "tracesmith: error: %s\n", st.ToString().c_str());
  writer_done_ = true;
  std::fflush(nullptr);
  _exit(status);
}

Status CuptiEngine::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (abandoned_.load() || !running_.load()) return OkStatus();
  RecordDeviceMemoryUsed();  // on this thread, before the writer's final flush
  stop_requested_ = true;
  if (writer_.joinable()) writer_.join();
  running_ = false;
  StopStacks();
  if (subscriber_) {
    cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
  }
  return sbt_ ? sbt_->status() : OkStatus();
}

void CuptiEngine::StopFromSignal(int timeout_ms) {
  if (abandoned_.load() || !running_.load()) return;
  stop_requested_ = true;
  if (static_cast<uint64_t>(syscall(SYS_gettid)) == writer_tid_.load()) return;
  for (int waited = 0; !writer_done_.load() && waited < timeout_ms; waited += 5) SleepNs(kPollNs);
}

Status CuptiEngine::FlushNow() {
  if (!running_.load()) return FailedPrecondition("no capture is running");
  uint64_t req = flush_requests_.fetch_add(1) + 1;
  for (int waited = 0; flushes_done_.load() < req; waited += 5) {
    if (writer_done_.load()) break;
    if (waited > 30000) return Internal("capture writer did not flush within 30 s");
    SleepNs(kPollNs);
  }
  return sbt_->status();
}

}  // namespace tracesmith::capture
