// CompactTrace: the analysis engine's working set — every event reduced to a
// fixed-size record of what analysis needs, in time order per lane.
//
// A 10M-event trace does not fit in memory as model:: rows (a KernelEvent is
// over 100 bytes), so events are ingested chunk by chunk (SbtReader::Stream)
// and kept as 32-byte GpuOp / HostCall records. Finalize() then
//   1. converts each process's timestamps to a common CLOCK_REALTIME domain
//      through its ClockAnchor rows when the trace holds several processes
//      (one process keeps its capture clock: nothing to align with);
//   2. orders each lane (a GPU stream, or a host thread) by time with the
//      windowed sorter (sorter.h): rows arrive almost sorted, so this is
//      linear unless the capture reordered them badly;
//   3. builds the correlation indexes that join API calls and GPU ops.
// Global time order across lanes is then a k-way merge (sorter.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/model/trace.h"
#include "tracesmith/timeline/compact_records.h"
#include "tracesmith/timeline/gpu_metric_series.h"
#include "tracesmith/timeline/graph_kernels.h"
#include "tracesmith/timeline/index_column.h"
#include "tracesmith/timeline/pc_samples.h"
#include "tracesmith/timeline/record_store.h"
#include "tracesmith/timeline/record_view.h"
#include "tracesmith/timeline/sorter.h"

namespace tracesmith::analysis {

inline constexpr uint32_t kNone = UINT32_MAX;

// One value of the program's own counters (AppCounterEvent rows, app.h's
// ts_app_counter), as CompactTrace keeps it (times on its common clock);
// `analyze` sums them up per step ("Program counters").
struct AppCounterPoint {
  uint64_t ts_ns = 0;
  double value = 0;
  uint32_t pid = 0;
  uint32_t name_id = 0;
};

// How analyses read the ops and calls (record_view.h): by value.
using OpView = RecordView<RecordStore<OpCodec>>;
using CallView = RecordView<RecordStore<CallCodec>>;

// Bytes and endpoints of a memcpy or memset (about 2% of GPU ops).
struct CopyInfo {
  uint64_t bytes = 0;
  uint32_t src_device = 0, dst_device = 0;
  uint8_t copy_kind = 0;  // model::CopyKind; memsets use kCopyUnknown
  uint8_t src_kind = 0, dst_kind = 0;
  bool is_memset = false;
};

struct SyncRecord {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0, event_id = 0;
  uint32_t pid = 0, device_id = 0, stream_id = 0;
  uint32_t lane = kNone;  // the GPU lane of (pid, device, stream) when it has ops
  uint8_t sync_type = 0;  // model::SyncType
};

struct NvtxRecord {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t name_id = 0;
  uint32_t lane = 0;  // host lane (pid, tid)
};

// An NVTX payload (model::NvtxPayloadEvent): its decoded text, when and on
// which host lane its range was pushed or its mark made.
struct NvtxPayloadRecord {
  uint64_t ts_ns = 0;
  uint32_t lane = 0;  // host lane (pid, tid)
  uint32_t text_id = 0;
};

struct GraphLaunchRecord {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0, graph_id = 0, pid = 0, device_id = 0;
};

// The key of a GPU lane. Stream ids are per context and small; 24 bits of
// stream and 8 of device with the pid make a unique key for every trace
// CUPTI can produce.
inline uint64_t GpuLaneKey(uint32_t pid, uint32_t device, uint32_t stream) {
  return (uint64_t(pid) << 32) ^ (uint64_t(device & 0xff) << 24) ^ (stream & 0xffffffu) ^
         (uint64_t(stream >> 24) << 56);
}
inline uint64_t HostLaneKey(uint32_t pid, uint32_t tid) { return (uint64_t(pid) << 32) | tid; }

// How the processes of a trace are put on one clock (CompactTrace::Finalize,
// step 1): only with two or more processes and at least one anchor in the
// trace; then each process with anchors gets its ClockMap, one without is
// left as is and counted.
class ClockAlignment {
 public:
  // `pids`: every process with events; `anchors`: the trace's ClockAnchor rows.
  static ClockAlignment Build(const std::set<uint32_t>& pids,
                              const std::vector<model::ClockAnchor>& anchors);
  bool aligned() const { return !maps_.empty(); }
  const ClockMap* MapOf(uint32_t pid) const;  // null: times kept as recorded
  uint64_t unaligned() const { return unaligned_; }

 private:
  std::map<uint32_t, ClockMap> maps_;
  uint64_t unaligned_ = 0;
};

// A GPU stream (pid, device, stream) or a host thread (pid, tid).
struct Lane {
  bool host = false;
  uint32_t pid = 0;
  uint32_t device = 0;  // GPU lanes
  uint32_t stream = 0;  // GPU lanes
  uint32_t tid = 0;     // host lanes
};

// Maps (pid, correlation id) to a record index. Dense per pid when ids are
// (CUPTI hands them out sequentially), sorted pairs otherwise.
class CorrelationIndex {
 public:
  struct Entry {
    uint32_t pid, correlation, index;
  };
  // `for_each(fn)` calls fn(entry) for every entry, in the same order at each call: the
  // entries are read once per pass and never stored (a list would be 12 bytes per op or
  // call, 123 MB at 10 M kernels, on top of the peak of loading).
  template <typename ForEach>
  // Of several entries with one id, the later wins.
  void Build(const ForEach& for_each);
  // The same index, its dense tables packed (IndexColumn: about a byte an id instead of 4,
  // 409 MB at 100 M calls), filled in id order by merging `runs` runs of entries, each
  // run's ids rising: entry(run, j) for j < size(run) (an id of 0: none). Of several
  // entries with one id, the one of the largest index wins. False, nothing built, when a
  // run's ids fall or a process's ids are not dense (then Build).
  template <typename Size, typename EntryAt>
  bool BuildPacked(size_t runs, const Size& size, const EntryAt& entry);
  uint32_t Find(uint32_t pid, uint32_t correlation) const;

 private:
  struct PidTable {
    uint32_t pid = 0, base = 0;
    std::vector<uint32_t> dense;  // index by correlation - base
    IndexColumn packed;           // the same, packed (BuildPacked)
    std::vector<Entry> sparse;    // sorted by correlation when not dense
  };
  std::vector<PidTable> tables_;
};

struct CompactStats {
  uint64_t events_ingested = 0;      // event rows seen (all kinds)
  uint64_t events_ignored = 0;       // kinds analysis does not use (counters, memory, ...)
  uint64_t inverted_intervals = 0;   // end < start: clamped to zero length
  uint64_t lanes_resorted = 0;       // lanes the windowed sorter could not fix in-window
  uint64_t processes_unaligned = 0;  // multi-process trace, process without a clock anchor
  bool clocks_aligned = false;       // timestamps converted to CLOCK_REALTIME
  double finalize_seconds = 0;       // wall time of Finalize() (benchmarks)
};

class CompactTrace {
 public:
  CompactTrace();

  // Ingests event rows of `kind` from `batch` (kKernel ... kDrop), and
  // refreshes the metadata copy (strings, devices, processes, anchors,
  // stacks) when `batch` holds more of it than seen so far.
  void Ingest(const model::Trace& batch, model::TableKind kind) {
    RefreshMeta(batch);
    IngestEvents(batch, kind);
  }
  // Ingest's second half: the event rows of `kind` alone, the metadata copy left as it is.
  // It reads and writes nothing IngestMetadata does: a loader may refresh the metadata on
  // one thread while another ingests rows (analysis/load.cc).
  void IngestEvents(const model::Trace& batch, model::TableKind kind);
  // Refreshes the metadata copy only (the end of a streamed file: anchors and
  // stats written after the last events).
  void IngestMetadata(const model::Trace& batch) { RefreshMeta(batch); }
  // Reserves room for this many GPU ops and API calls (from a file's index).
  void Reserve(uint64_t ops, uint64_t calls) {
    ops_.Reserve(ops);
    calls_.Reserve(calls);
  }
  // How the ops and calls are kept (record_store.h; arrays unless set): before ingesting.
  void SetRecordForm(RecordForm form) {
    ops_.SetForm(form);
    calls_.SetForm(form);
  }
  RecordForm record_form() const { return ops_.form(); }
  // Calls per window when packed records find each call's op (tests: several windows).
  void SetInversionWindow(size_t calls) { inversion_window_ = std::max<size_t>(1, calls); }
  // The memory the ops, the calls and the op -> call column hold (after Finalize).
  size_t record_bytes() const {
    return ops_.bytes() + calls_.bytes() + op_call_.bytes() + call_op_.bytes();
  }
  // Ingests every event and metadata row of a whole trace.
  void IngestAll(const model::Trace& trace);
  // From now on Ingest keeps only the event rows of process `pid` (metadata
  // stays whole): one process of a merged file at a time, in the memory of
  // that process alone (job/rank_summary.h).
  void SetProcessFilter(uint32_t pid) {
    filter_pid_ = pid;
    filtered_ = true;
  }
  bool process_filtered() const { return filtered_; }
  // Aligns clocks, sorts lanes, builds indexes. Call once, after ingesting.
  void Finalize();

  // Drops everything not overlapping [from, to] (absolute ns) and clips the
  // analysis window to it.
  void RestrictWindow(uint64_t from, uint64_t to);
  // Keeps only API calls inside NVTX ranges named `name` (on their thread)
  // and the GPU ops they issued; the window becomes the span of what is
  // kept. NotFound when no range has that name.
  Status RestrictToNvtx(const std::string& name);
  // Start-up and teardown: what lies before the first kernel (the first GPU
  // op when there is no kernel) and after the last GPU op.
  // RestrictToActiveRegion() keeps what lies between and remembers both spans with their longest
  // API calls, so that idle shares, findings and the critical path speak about the steady run and
  // not about process start, context creation and module loading.
  struct OutsideSpan {
    uint64_t begin = 0, end = 0;  // absolute ns; empty when begin == end
    struct Call {
      uint32_t name_id = 0;
      uint64_t start_ns = 0, ns = 0;
    };
    std::vector<Call> longest_calls;  // at most 3, longest first
    uint64_t api_ns = 0;              // CUDA API time inside the span, all threads summed
    uint64_t ns() const { return end - begin; }
  };
  struct ActiveRegion {
    bool applied = false;  // false: no GPU op, or not asked for
    bool kernels = true;   // false: the region starts at the first GPU op (no kernels)
    OutsideSpan startup, teardown;
    // The warm-up (SetWarmupApart): from the region's start to the first steady step; empty
    // when it was not set apart.
    OutsideSpan warmup;
    uint64_t trace_ns() const { return teardown.end - startup.begin; }  // the whole trace
    // First kernel to last GPU op: the window with the warm-up.
    uint64_t region_ns() const { return teardown.begin - startup.end; }
  };
  void RestrictToActiveRegion();
  const ActiveRegion& active_region() const { return active_; }
  // Steps chosen with --steps, as found before the window was cut to them:
  // their bounds and the number (1-based) of the first, so the report keeps
  // the numbering of the whole run instead of detecting steps again.
  struct ChosenSteps {
    std::vector<std::pair<uint64_t, uint64_t>> bounds;
    uint32_t first_number = 1;
    std::string method, anchor;
    uint32_t period = 0;
    // The steps before `bounds` that SetWarmupApart left out of the window (numbered from 1),
    // measured before the cut, as DetectSteps measures a step.
    struct Measured {
      uint64_t begin_ns = 0, end_ns = 0, gpu_busy_ns = 0;
      uint32_t kernels = 0;
    };
    std::vector<Measured> warmup;
    bool none = false;  // the window was searched for steps and has none
  };
  void SetChosenSteps(ChosenSteps steps) { chosen_steps_ = std::move(steps); }
  const ChosenSteps& chosen_steps() const { return chosen_steps_; }
  // The warm-up apart (after RestrictToActiveRegion): the window starts at `steady_begin`, the
  // first steady step, and what lay before it is remembered as active_region().warmup with its
  // longest API calls; `steps` are the steady steps with the warm-up steps (ChosenSteps::warmup).
  void SetWarmupApart(uint64_t steady_begin, ChosenSteps steps);

  // ---- results (valid after Finalize) ----
  // GPU ops and API calls, by lane and in time order within a lane (lane_range): read by
  // value through a view (record_view.h), never by reference.
  OpView ops() const { return OpView(ops_); }
  CallView calls() const { return CallView(calls_); }
  const std::vector<CopyInfo>& copies() const { return copies_; }
  const std::vector<SyncRecord>& syncs() const { return syncs_; }  // by start
  const std::vector<NvtxRecord>& nvtx() const { return nvtx_; }    // by (lane, start)
  const std::vector<NvtxPayloadRecord>& nvtx_payloads() const {
    return nvtx_payloads_;
  }  // by (lane, ts)
  const std::vector<GraphLaunchRecord>& graph_launches() const { return graphs_; }
  // The graph nodes kernels ran from (GpuOp::extra of a kernel), with the
  // stack that made each (graph_kernels.h).
  const GraphKernels& graph_kernels() const { return graph_kernels_; }
  // The CUDA graph a kernel ran from (0: none).
  uint32_t GraphOfOp(GpuOp op) const {
    return op.kind() == OpKind::kKernel ? graph_kernels_[op.extra].graph_id : 0;
  }
  // GPU instruction samples, aggregated as they arrived (the whole trace's: not windowed).
  const PcSamples& pc_samples() const { return pc_samples_; }
  // Kernels of each process as ingested: the whole trace's, not windowed (what the
  // capture cost per launch divides by, as `info` counts them).
  const std::map<uint32_t, uint64_t>& kernels_per_pid() const { return kernels_per_pid_; }
  // GPU metric samples (profile --gpu-metrics), the whole trace's: not windowed.
  const GpuMetricSeries& gpu_metrics() const { return gpu_metrics_; }
  // The program's own counters (AppCounterEvent rows), in time order, the whole trace's:
  // not windowed; at most kMaxAppCounterPoints (the rest counted, not kept).
  // The program's ranges (AppEvent ranges) are NvtxRecords: analysed as NVTX ranges are.
  static constexpr size_t kMaxAppCounterPoints = size_t(4) << 20;  // 96 MB
  const std::vector<AppCounterPoint>& app_counters() const { return app_counters_; }
  uint64_t app_counter_values() const { return app_counters_.size() + app_counters_dropped_; }
  uint64_t app_counters_dropped() const { return app_counters_dropped_; }
  // Kernels that ran past `profile --kernel-timeout` (their rows, few).
  const std::vector<model::KernelTimeoutEvent>& kernel_timeouts() const { return timeouts_; }
  const std::vector<Lane>& lanes() const { return lanes_; }
  // Ops of a GPU lane / calls of a host lane, in time order.
  LaneRange lane_range(uint32_t lane) const { return ranges_[lane]; }
  // Lanes of GPU streams, sorted by (pid, device, stream).
  const std::vector<uint32_t>& gpu_lanes() const { return gpu_lanes_; }
  // Devices with GPU work, sorted; and their lanes.
  const std::vector<uint32_t>& devices() const { return devices_; }
  std::vector<uint32_t> DeviceLanes(uint32_t device) const;

  // The API call that issued ops()[op], or kNone (precomputed); and that
  // call's [start, end) ({0, 0} when none). Calls are not copied per op: 16
  // bytes per op would be 160 MB at 10 M ops.
  uint32_t CallOfOp(uint32_t op) const {
    IndexCorrelations();
    return op_call_[op];
  }
  Interval CallSpanOfOp(uint32_t op) const {
    const uint32_t c = CallOfOp(op);
    if (c == kNone) return Interval{};
    const HostCall call = calls_[c];
    return Interval{call.start_ns, call.end_ns};
  }
  // The host stack behind ops()[op] (0: none): for a kernel replayed from a
  // CUDA graph, the stack of the call that put its node in the graph when
  // the trace knows it (graph_kernels.h); else the issuing call's.
  uint32_t StackOfOp(uint32_t op) const {
    const GpuOp o = ops_[op];
    if (o.kind() == OpKind::kKernel && o.extra)
      if (const uint32_t s = graph_kernels_[o.extra].stack_id) return s;
    const uint32_t c = CallOfOp(op);
    return c == kNone ? 0 : calls_[c].stack_id;
  }
  // Builds the op -> call and call -> op columns now if they are not (else at their first
  // use): for a user that allocates much afterwards (the schedule emulator), so that their
  // building's transient table is not beside it.
  void IndexCorrelations() const {
    if (!index_state_.built.load(std::memory_order_acquire)) BuildCorrelationIndexes();
  }
  // The last-ending GPU op issued by calls()[call], or kNone (precomputed).
  uint32_t OpOfCall(uint32_t call) const {
    IndexCorrelations();
    return call_op_[call];
  }
  uint32_t PidOfLane(uint32_t lane) const { return lanes_[lane].pid; }
  // How Finalize put process `pid`'s times on the common clock (null: kept as
  // recorded), for rows read from the file again (analysis/kernel_page.h).
  const ClockMap* ClockOf(uint32_t pid) const { return clocks_.MapOf(pid); }

  // Analysis window (absolute ns, after clock alignment): the trace's time
  // range unless restricted. Wall time is end - begin.
  uint64_t window_begin() const { return window_begin_; }
  uint64_t window_end() const { return window_end_; }
  // First event time: --from/--to offsets are relative to this.
  uint64_t trace_begin() const { return trace_begin_; }

  // Strings, devices, processes, clock anchors, frames and stacks.
  const model::Trace& meta() const { return meta_; }
  std::string_view String(uint32_t id) const { return meta_.strings.Get(id); }
  const CompactStats& stats() const { return stats_; }
  bool empty() const { return ops_.empty() && calls_.empty(); }

 private:
  uint32_t GpuLane(uint32_t pid, uint32_t device, uint32_t stream);
  uint32_t HostLane(uint32_t pid, uint32_t tid);
  void RefreshMeta(const model::Trace& batch);
  template <typename T>
  void IngestRows(const std::vector<T>& rows);
  void AlignClocks();
  void SortAndIndex();
  void ComputeRanges();  // lane ranges, GPU lanes, devices
  void BuildIndexes();   // sync lanes; the correlation indexes to be built again
  // The correlation indexes (op_call_, call_op_) are built at their first use after
  // Finalize or a restriction, once (the first thread to need them builds them): not
  // before steps are found and the window cut to them, when they would be built again, and
  // the calls' correlation table they are built with (4 bytes per id) not beside what
  // finding steps takes (the peak of a 100 M-kernel trace).
  void BuildCorrelationIndexes() const;
  void InvertOpCall() const;  // call_op_ from op_call_

  ActiveRegion active_;
  ChosenSteps chosen_steps_;
  RecordStore<OpCodec> ops_;
  RecordStore<CallCodec> calls_;
  std::vector<CopyInfo> copies_;
  std::vector<SyncRecord> syncs_;
  std::vector<NvtxRecord> nvtx_;
  std::vector<NvtxPayloadRecord> nvtx_payloads_;
  std::vector<GraphLaunchRecord> graphs_;
  GraphKernels graph_kernels_;
  PcSamples pc_samples_;
  GpuMetricSeries gpu_metrics_;
  std::vector<AppCounterPoint> app_counters_;
  uint64_t app_counters_dropped_ = 0;
  std::vector<model::KernelTimeoutEvent> timeouts_;
  ClockAlignment clocks_;
  std::vector<Lane> lanes_;
  std::vector<LaneRange> ranges_;
  std::vector<uint32_t> gpu_lanes_, devices_;
  std::unordered_map<uint64_t, uint32_t> gpu_lane_index_, host_lane_index_;
  uint64_t last_gpu_key_ = UINT64_MAX, last_host_key_ = UINT64_MAX;
  uint32_t last_gpu_lane_ = 0, last_host_lane_ = 0;
  mutable IndexColumn op_call_, call_op_;  // packed when the records are
  size_t inversion_window_ = size_t(1) << 22;
  // Whether the correlation indexes are built, and the lock of building them; a trace moves
  // only while nothing reads it.
  struct IndexState {
    std::atomic<bool> built{false};
    std::mutex mu;
    IndexState() = default;
    IndexState(IndexState&& o) noexcept : built(o.built.load()) {}
    IndexState& operator=(IndexState&& o) noexcept {
      built.store(o.built.load());
      return *this;
    }
  };
  mutable IndexState index_state_;
  model::Trace meta_;
  uint32_t filter_pid_ = 0;
  bool filtered_ = false;
  uint64_t window_begin_ = 0, window_end_ = 0, trace_begin_ = 0;
  std::map<uint32_t, uint64_t> kernels_per_pid_;
  CompactStats stats_;
  bool finalized_ = false;
};

// --from/--to (durations after t0, the trace's start; empty: open) as the
// absolute [from, to] that CompactTrace::RestrictWindow takes; an error when
// from is not before to.
struct TimeWindowNs {
  uint64_t from = 0, to = UINT64_MAX;
};
StatusOr<TimeWindowNs> ParseTimeWindow(const std::string& from, const std::string& to, uint64_t t0);

}  // namespace tracesmith::analysis
