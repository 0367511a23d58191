// ReplayCapturer: `tracesmith profile --replay-capture=<filter>`. For each
// selected kernel launch it records what `tracesmith replay` needs to re-run
// the launch standalone (docs/replay-format.md): the module image, the
// function, the launch configuration, the parameter buffer with its layout
// (cuFuncGetParamInfo) and, before and after the launch, the contents of
// every allocation the parameters point into (cuMemGetAddressRange on each
// 8-byte-aligned word of the parameter buffer) and, with --replay-memory
// reachable (the default), every allocation reached through pointers stored
// in those, transitively (reach_scan.h).
//
// Cost: a selected launch synchronizes the context twice and copies its
// allocations to the host (the copies show up in the trace as DtoH copies).
// Unselected launches cost one counter increment (plus a name lookup for
// kernel:<regex>, cached per function). Images are content-addressed, so an
// allocation unchanged between launches is stored once.
//
// Threads: OnLaunch/OnModuleLoaded run on application threads inside CUPTI
// callbacks and queue rows under a mutex (slow path only); Drain runs on the
// writer thread and appends them to the SBT file. Launches on a stream that
// is being captured into a CUDA graph cannot synchronize and are skipped
// (counted).
//
// CUDA graphs (#15): a cuGraphLaunch counts as one launch; selected, its
// graph (a clone kept since instantiation, graph_capture.h) is recorded as
// a graph launch: every node, and the memory of all its nodes before and
// after the whole launch.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph_capture.h"
#include "image_allocator.h"
#include "replay_stream_ops.h"
#include "tracesmith/base/pattern.h"
#include "tracesmith/capture/capture_options.h"
#include "tracesmith/format/replay_payload.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::replay_capture {

struct LaunchArgs;  // replay_capture.cc: a launch's decoded driver parameters

struct ReplayCaptureStats {
  uint64_t launches_seen = 0;              // kernel launches counted by the filter
  uint64_t launches_captured = 0;          // recorded with their images
  uint64_t skipped_limit = 0;              // selected, but over --replay-max-mb / -launches
  uint64_t skipped_graph = 0;              // selected, on a stream capturing a CUDA graph
  uint64_t skipped_error = 0;              // selected, but a CUDA call failed while recording
  uint64_t graph_launches_captured = 0;    // cuGraphLaunch recorded with its nodes
  uint64_t skipped_graph_unsupported = 0;  // selected graph launch with a node kind replay lacks
  uint64_t skipped_graph_changed =
      0;  // selected graph launch of an exec changed after instantiation
  uint64_t skipped_graph_unknown = 0;  // selected graph launch of an exec instantiated unseen
  uint64_t stream_ops = 0;        // copies, memsets, event/sync calls recorded for range replay
  uint64_t image_bytes = 0;       // memory image bytes copied
  uint64_t reached_ranges = 0;    // allocations snapshotted because pointers in memory reach them
  uint64_t reached_bytes = 0;     // their bytes (before images)
  uint64_t reach_incomplete = 0;  // launches whose reachable memory was not all recorded
  uint64_t reach_scan_ns = 0;     // time in the pointer scans (probes included)
  uint64_t copy_ns = 0;           // time in those copies (host buffer allocation included)
  // A plain 64 MiB cuMemcpyDtoH into pageable memory, timed once at the first
  // recorded launch: what the snapshot throughput is compared with.
  double reference_dtoh_gbps = 0;
};

class ReplayCapturer {
 public:
  ReplayCapturer(capture::ReplayFilter filter, const capture::CaptureOptions& options);

  // True for the driver callbacks OnLaunch handles.
  static bool IsLaunchCallback(CUpti_CallbackId cbid);
  // Application thread, CUPTI driver callback, entry and exit. `active`:
  // the capture range (if any) is on.
  void OnLaunch(CUpti_CallbackId cbid, const CUpti_CallbackData* info, bool active);
  // Application thread, CUPTI module-loaded callback.
  void OnModuleLoaded(const void* image, size_t size);
  // --replay-memory reachable and all: the live allocations, through
  // cuMemAlloc, cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemAllocManaged,
  // cuMemAllocPitch, cuMemMap and their frees / cuMemUnmap.
  static bool IsMemoryCallback(CUpti_CallbackId cbid);
  bool tracks_allocations() const { return scope_ != format::MemoryScope::kParams; }
  void OnMemory(CUpti_CallbackId cbid, const CUpti_CallbackData* info);
  // Range replay: copies, memsets, event record/wait and synchronizations
  // (replay_stream_ops.h), recorded from the first recorded launch on.
  static bool IsStreamOpCallback(CUpti_CallbackId cbid);
  void OnStreamOp(CUpti_CallbackId cbid, const CUpti_CallbackData* info, bool active);
  // CUDA graphs: instantiation, update, node parameter changes, destruction
  // and launch (cuGraphLaunch counts in the launch index like a kernel).
  static bool IsGraphCallback(CUpti_CallbackId cbid);
  void OnGraph(CUpti_CallbackId cbid, const CUpti_CallbackData* info, bool active);
  // Writer thread: appends queued payload chunks.
  void Drain(format::SbtWriter* writer);
  ReplayCaptureStats stats();

 private:
  struct Range {
    uint64_t address = 0, size = 0;
    format::SnapshotOrigin origin;  // why it is snapshotted
  };
  struct Pending {  // between a launch's entry and exit
    format::LaunchRecord launch;
    CUfunction function = nullptr;
    std::vector<Range> ranges;
    // A graph launch: its record (launch is unused but for index and name)
    // and each node's function (null for nodes that are not kernels).
    bool is_graph = false;
    format::GraphLaunchRecord graph;
    std::vector<CUfunction> node_functions;
  };
  using Buffer = ImageBuffer;
  struct Snapshot {
    uint64_t launch_index;
    format::SnapshotPhase phase;
    uint64_t address;
    Buffer bytes;
    format::SnapshotOrigin origin;
  };
  // Host buffers for images are reused once written (a fresh buffer pays
  // page faults during the copy; image_allocator.h). At most
  // kMaxFreeBufferBytes are kept.
  static constexpr uint64_t kMaxFreeBufferBytes = uint64_t(2) << 30;
  Buffer TakeBuffer(uint64_t size);
  void RecycleBuffers(std::vector<Snapshot>& written);
  struct Module {
    std::vector<uint8_t> image;
    uint64_t hash = 0;
    bool written = false;
  };

  // Whether a kernel name (mangled, or demangled) matches the kKernel regex.
  bool NameMatches(const char* name) const;
  bool Selected(uint64_t index, CUfunction f);
  void OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info, uint64_t index,
               struct LaunchArgs a);
  void OnExit(const CUpti_CallbackData* info);
  void OnGraphLaunch(const CUpti_CallbackData* info, uint64_t index, CUgraphExec exec,
                     CUstream stream, bool per_thread);
  // Adds the allocations that 8-byte words of `params` point into.
  static void AddParamRanges(std::span<const uint8_t> params, std::vector<Range>* ranges);
  // Adds an allocation (or the span itself when the driver knows none).
  static void AddRange(Range r, std::vector<Range>* ranges);
  // Shared by launches and graph launches from the parameters' ranges on:
  // adds requested and (--replay-memory all) live ranges, checks the
  // limits, registers `p` as pending, synchronizes and copies the "before"
  // images and the reachable memory. False when not recorded (counted).
  bool RecordBefore(const CUpti_CallbackData* info, uint64_t index, const std::string& what,
                    Pending p);
  // At the exit of a recorded graph launch (OnExit).
  void FinishGraph(const CUpti_CallbackData* info, bool ok);
  bool StreamCapturing(CUstream stream, uint64_t index);
  // For kernel:REGEX, any kernel node of `walked` matches (cached per clone).
  bool GraphSelected(uint64_t index, CUgraph clone, const WalkedGraph* walked);
  // Copies each range to a host buffer, into `into` (or the queue when null).
  bool CopyRanges(const std::vector<Range>& ranges, uint64_t index, format::SnapshotPhase phase,
                  std::vector<Snapshot>* into = nullptr);
  // --replay-memory reachable: scans the copied "before" images for pointers
  // into other allocations, copies those (appended to `taken` and `ranges`),
  // and scans them in turn, within `budget` bytes. False when a copy failed.
  bool AddReachable(uint64_t index, uint64_t budget, std::vector<Range>* ranges,
                    std::vector<Snapshot>* taken, format::MemoryCoverage* coverage);
  void MeasureReferenceCopy();
  uint64_t ModuleHashOf(CUfunction f, const std::string& name);
  void Note(const char* fmt, ...);
  // Under mu_: the capture's id of a stream / event, assigned at first
  // sight (a stream's first sight also queues its kStreamInfo op).
  uint32_t StreamIdLocked(CUstream stream, bool per_thread, uint64_t before_launch);
  uint32_t EventIdLocked(CUevent event);

  const capture::ReplayFilter filter_;
  Pattern regex_;  // the kKernel filter (validated with the options)
  const uint64_t max_bytes_;
  const uint32_t max_launches_;
  const bool quiet_;
  const format::MemoryScope scope_;
  const uint32_t reach_depth_;
  std::vector<capture::DeviceRange> extra_ranges_;
  std::atomic<uint64_t> launch_counter_{0};

  std::mutex mu_;  // everything below
  std::unordered_map<CUfunction, bool> regex_cache_;
  std::unordered_map<CUgraph, bool> graph_regex_cache_;
  std::unordered_map<CUfunction, uint64_t> module_of_;
  std::map<uint64_t, uint64_t> live_;  // --replay-memory reachable/all: base -> size
  std::vector<std::unique_ptr<Module>> modules_;
  std::unordered_map<uint32_t, Pending> pending_;  // by correlation id
  std::vector<format::LaunchRecord> launches_out_;
  std::vector<format::GraphLaunchRecord> graphs_out_;
  GraphExecTable graph_execs_;                     // own lock
  std::map<std::string, bool> unsupported_noted_;  // node kinds already named in a note
  std::vector<Snapshot> snapshots_out_;
  std::vector<Buffer> free_buffers_;
  uint64_t free_bytes_ = 0;
  struct QueuedOp {
    format::StreamOpRecord op;
    std::vector<uint8_t> data;  // kCopyHtoD: the host bytes
  };
  std::vector<QueuedOp> ops_out_;
  std::unordered_map<CUstream, uint32_t> stream_ids_;
  std::unordered_map<CUevent, uint32_t> event_ids_;
  uint64_t next_op_seq_ = 0;
  std::atomic<bool> ops_on_{false};  // from the first recorded launch until a limit
  uint64_t reserved_bytes_ = 0;      // images copied or about to be
  bool info_written_ = false;
  bool limit_noted_ = false;
  bool reference_measured_ = false;
  ReplayCaptureStats stats_;
  std::unique_ptr<format::ReplayPayloadWriter> payload_;
};

}  // namespace tracesmith::replay_capture
