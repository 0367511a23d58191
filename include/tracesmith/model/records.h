// The TraceSmith event model: every record kind a trace can hold.
//
// Events (kernels, copies, API calls, NVTX, allocations, ...) and metadata
// (devices, processes, threads, clock anchors, stack frames, ...) are all
// fixed-size plain structs defined by one field list each. The list drives
// the SBT columnar codec (format/), the round-trip tests and the generic
// printers, so adding a field is one line here plus nothing else.
//
// Conventions
// - Timestamps are nanoseconds in the process's capture clock domain (CUPTI's
//   timestamp for CUDA captures); ClockAnchor rows map that domain to
//   CLOCK_REALTIME and CLOCK_MONOTONIC. 0 means "unknown".
// - *_id fields ending in a string ("name_id", "path_id") index the trace's
//   StringTable; 0 is the empty string.
// - stack_id indexes the StackNode table (1-based); 0 means "no stack".
// - Enumerations mirror CUPTI's numeric values where CUPTI defines them, so
//   capture converts without tables; they are part of the file format.
// - Field 0 of every event is its primary timestamp (start_ns or ts_ns).
#pragma once

#include <cstdint>

#include "tracesmith/model/record_macros.h"

namespace tracesmith::model {

// Persisted in SBT table chunks: never renumber, only append.
enum class TableKind : uint16_t {
  kKernel = 1,
  kMemcpy = 2,
  kMemset = 3,
  kSync = 4,
  kApi = 5,
  kNvtxRange = 6,
  kNvtxMarker = 7,
  kMemory = 8,
  kCounter = 9,
  kModuleLoad = 10,
  kGraphLaunch = 11,
  kOverhead = 12,
  kDrop = 13,
  // metadata
  kDevice = 64,
  kProcess = 65,
  kThread = 66,
  kClockAnchor = 67,
  kMapping = 68,
  kFrame = 69,
  kStackNode = 70,
  kStat = 71,
  kMetadata = 72,
};

// CUpti_ActivityMemcpyKind values.
enum CopyKind : uint8_t {
  kCopyUnknown = 0,
  kCopyHtoD = 1,
  kCopyDtoH = 2,
  kCopyHtoA = 3,
  kCopyAtoH = 4,
  kCopyAtoA = 5,
  kCopyAtoD = 6,
  kCopyDtoA = 7,
  kCopyDtoD = 8,
  kCopyHtoH = 9,
  kCopyPtoP = 10,
};
// CUpti_ActivityMemoryKind values.
enum MemoryKind : uint8_t {
  kMemUnknown = 0,
  kMemPageable = 1,
  kMemPinned = 2,
  kMemDevice = 3,
  kMemArray = 4,
  kMemManaged = 5,
  kMemDeviceStatic = 6,
  kMemManagedStatic = 7,
};
// CUpti_ActivitySynchronizationType values.
enum SyncType : uint8_t {
  kSyncUnknown = 0,
  kSyncEventSynchronize = 1,
  kSyncStreamWaitEvent = 2,
  kSyncStreamSynchronize = 3,
  kSyncContextSynchronize = 4,
};
enum ApiDomain : uint8_t { kApiRuntime = 1, kApiDriver = 2 };
// NvtxRangeEvent::kineto_args bits: which of torch's args an imported range
// had. kKinetoExternalId: "External id"; kKinetoOpArgs: "Record function
// id" and "Ev Idx" (cpu_op, user_annotation); kKinetoSequence: "Sequence
// number" and "Fwd thread id" (ops recorded by autograd).
enum KinetoArgs : uint8_t { kKinetoExternalId = 1, kKinetoOpArgs = 2, kKinetoSequence = 4 };
// MemoryEvent::op. 1 and 2 are CUpti_ActivityMemoryOperationType values
// (CUPTI's MEMORY2 records). From 3 on they are TraceSmith's own, made from
// driver callbacks on the calls CUPTI has no memory record for: the virtual
// memory management API (cuMemCreate/Release: physical memory, `address` =
// the allocation handle; cuMemMap/Unmap: mapping it at `address`;
// cuMemAddressReserve/Free: address space only) and IPC imports
// (cuIpcOpenMemHandle/CloseMemHandle: another process's allocation).
enum MemoryOp : uint8_t {
  kMemoryAlloc = 1,
  kMemoryFree = 2,
  kMemoryVmmCreate = 3,
  kMemoryVmmRelease = 4,
  kMemoryVmmMap = 5,
  kMemoryVmmUnmap = 6,
  kMemoryVmmReserve = 7,
  kMemoryVmmUnreserve = 8,
  kMemoryIpcOpen = 9,
  kMemoryIpcClose = 10,
};
enum ModuleOp : uint8_t { kModuleLoaded = 1, kModuleUnloaded = 2 };
enum DropReason : uint8_t {
  kDropCupti = 1,       // cuptiActivityGetNumDroppedRecords
  kDropBufferCap = 2,   // --buffer-mb reached: records discarded by TraceSmith
  kDropStackTable = 3,  // stack table full
};
enum FrameKind : uint8_t { kFrameNative = 1, kFramePython = 2 };
enum ClockPhase : uint8_t { kClockStart = 1, kClockEnd = 2 };
enum StatSeverity : uint8_t { kStatInfo = 0, kStatWarning = 1, kStatDataLoss = 2 };

// clang-format off
#define TS_KERNEL_FIELDS(X)                      \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint64_t, queued_ns, kRelStart)              \
  X(uint64_t, submitted_ns, kRelStart)           \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, stack_id, kDelta)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, context_id, kConfig)               \
  X(uint32_t, stream_id, kConfig)                \
  X(uint32_t, name_id, kConfig)                  \
  X(uint32_t, demangled_id, kConfig)             \
  X(uint32_t, grid_x, kConfig)                   \
  X(uint32_t, grid_y, kConfig)                   \
  X(uint32_t, grid_z, kConfig)                   \
  X(uint32_t, block_x, kConfig)                  \
  X(uint32_t, block_y, kConfig)                  \
  X(uint32_t, block_z, kConfig)                  \
  X(uint32_t, cluster_x, kConfig)                \
  X(uint32_t, cluster_y, kConfig)                \
  X(uint32_t, cluster_z, kConfig)                \
  X(uint32_t, registers_per_thread, kConfig)     \
  X(uint32_t, static_shared_bytes, kConfig)      \
  X(uint32_t, dynamic_shared_bytes, kConfig)     \
  X(uint32_t, local_bytes_per_thread, kConfig)   \
  X(uint32_t, graph_id, kConfig)                 \
  X(uint64_t, graph_node_id, kConfig)            \
  X(uint8_t, launch_type, kConfig)
TS_DEFINE_RECORD(KernelEvent, kKernel, "kernel", true, TS_KERNEL_FIELDS)

#define TS_MEMCPY_FIELDS(X)                      \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint64_t, bytes, kDelta)                     \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, stack_id, kDelta)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, context_id, kConfig)               \
  X(uint32_t, stream_id, kConfig)                \
  X(uint8_t, copy_kind, kConfig)                 \
  X(uint8_t, src_kind, kConfig)                  \
  X(uint8_t, dst_kind, kConfig)                  \
  X(uint8_t, is_async, kConfig)                  \
  X(uint32_t, src_device_id, kConfig)            \
  X(uint32_t, dst_device_id, kConfig)            \
  X(uint32_t, graph_id, kConfig)                 \
  X(uint64_t, graph_node_id, kConfig)
TS_DEFINE_RECORD(MemcpyEvent, kMemcpy, "memcpy", true, TS_MEMCPY_FIELDS)

#define TS_MEMSET_FIELDS(X)                      \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint64_t, bytes, kDelta)                     \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, stack_id, kDelta)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, context_id, kConfig)               \
  X(uint32_t, stream_id, kConfig)                \
  X(uint32_t, value, kConfig)                    \
  X(uint8_t, memory_kind, kConfig)               \
  X(uint32_t, graph_id, kConfig)                 \
  X(uint64_t, graph_node_id, kConfig)
TS_DEFINE_RECORD(MemsetEvent, kMemset, "memset", true, TS_MEMSET_FIELDS)

// A host synchronization call (stream, event or context synchronize, stream
// wait event) with its API entry and exit times, from the capture's driver
// API callbacks (or CUPTI's SYNCHRONIZATION activity, --kinds sync-activity).
// event_id: the capture's id of the CUevent (one id per event handle in a
// process); tid and stack_id: the calling thread and its host stack (0 in
// traces written before they were recorded).
#define TS_SYNC_FIELDS(X)                        \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, event_id, kDelta)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, context_id, kConfig)               \
  X(uint32_t, stream_id, kConfig)                \
  X(uint8_t, sync_type, kConfig)                 \
  X(uint32_t, tid, kConfig)                      \
  X(uint32_t, stack_id, kDelta)
TS_DEFINE_RECORD(SyncEvent, kSync, "sync", true, TS_SYNC_FIELDS)

// A CUDA runtime or driver API call on a host thread. external_id/kind: the
// id a framework pushed with cuptiActivityPushExternalCorrelationId (kind is
// CUpti_ExternalCorrelationKind; 0 when none).
#define TS_API_FIELDS(X)                         \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, stack_id, kDelta)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint8_t, domain, kConfig)                    \
  X(uint32_t, cbid, kConfig)                     \
  X(uint32_t, name_id, kConfig)                  \
  X(int32_t, return_code, kConfig)               \
  X(uint64_t, external_id, kDelta)               \
  X(uint8_t, external_kind, kConfig)
TS_DEFINE_RECORD(ApiEvent, kApi, "api", true, TS_API_FIELDS)

// An NVTX range, or a CPU-side range of an imported torch.profiler trace
// (cpu_op, user_annotation, ...: the category is the domain). The fields
// after depth carry Kineto's args of such a range, so an imported trace
// exports them back (0 in captures and in traces written before they
// existed): kineto_args says which were present (KinetoArgs bits);
// flow_out_id / flow_in_id are the ids of the "fwdbwd" flows (forward op ->
// its backward op) starting / ending on the range, 0 for none.
#define TS_NVTX_RANGE_FIELDS(X)                  \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint64_t, range_id, kDelta)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint32_t, name_id, kConfig)                  \
  X(uint32_t, domain_id, kConfig)                \
  X(uint32_t, category, kConfig)                 \
  X(uint32_t, color, kConfig)                    \
  X(uint8_t, depth, kConfig)                     \
  X(uint64_t, external_id, kDelta)               \
  X(int64_t, sequence_number, kDelta)            \
  X(uint64_t, record_function_id, kDelta)        \
  X(uint32_t, ev_idx, kDelta)                    \
  X(uint32_t, fwd_thread_id, kConfig)            \
  X(uint32_t, flow_out_id, kDelta)               \
  X(uint32_t, flow_in_id, kDelta)                \
  X(uint8_t, kineto_args, kConfig)
TS_DEFINE_RECORD(NvtxRangeEvent, kNvtxRange, "nvtx", true, TS_NVTX_RANGE_FIELDS)

#define TS_NVTX_MARKER_FIELDS(X)                 \
  X(uint64_t, ts_ns, kTime)                      \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint32_t, name_id, kConfig)                  \
  X(uint32_t, domain_id, kConfig)                \
  X(uint32_t, category, kConfig)                 \
  X(uint32_t, color, kConfig)
TS_DEFINE_RECORD(NvtxMarkerEvent, kNvtxMarker, "marker", true, TS_NVTX_MARKER_FIELDS)

// A device (or pinned/managed) memory allocation or free.
#define TS_MEMORY_FIELDS(X)                      \
  X(uint64_t, ts_ns, kTime)                      \
  X(uint64_t, address, kDelta)                   \
  X(uint64_t, bytes, kDelta)                     \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, stack_id, kDelta)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, context_id, kConfig)               \
  X(uint32_t, stream_id, kConfig)                \
  X(uint8_t, op, kConfig)                        \
  X(uint8_t, memory_kind, kConfig)               \
  X(uint8_t, is_async, kConfig)
TS_DEFINE_RECORD(MemoryEvent, kMemory, "memory", true, TS_MEMORY_FIELDS)

#define TS_COUNTER_FIELDS(X)                     \
  X(uint64_t, ts_ns, kTime)                      \
  X(double, value, kRaw)                         \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, name_id, kConfig)
TS_DEFINE_RECORD(CounterEvent, kCounter, "counter", true, TS_COUNTER_FIELDS)
// The counter the capture writes with --kinds memory: device memory in use
// (cuMemGetInfo total - free, bytes, by this and every other process) on
// `device_id`, read when a context is created, at an in-process capture's
// start for devices that already have one, and at the capture's end.
inline constexpr char kDeviceMemoryUsedCounter[] = "device memory used (cuMemGetInfo)";
// The counters the Kineto importer writes from torch.profiler's [memory]
// events of CUDA memory: the caching allocator's own totals after an event
// ("Total Allocated", "Total Reserved"), bytes, per process and device, when
// they change.
inline constexpr char kTorchAllocatedCounter[] =
    "PyTorch caching allocator allocated (torch.profiler)";
inline constexpr char kTorchReservedCounter[] = "PyTorch caching allocator reserved (torch.profiler)";

// cubin_hash: the image's identity (src/capture/cubin_hash.h; since
// 2026-11-24 the whole image up to 256 KiB, above that its size and 64
// sampled 4 KiB blocks; before, every byte with another function).
#define TS_MODULE_LOAD_FIELDS(X)                 \
  X(uint64_t, ts_ns, kTime)                      \
  X(uint32_t, module_id, kDelta)                 \
  X(uint64_t, cubin_bytes, kDelta)               \
  X(uint64_t, cubin_hash, kRaw)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, context_id, kConfig)               \
  X(uint8_t, op, kConfig)
TS_DEFINE_RECORD(ModuleLoadEvent, kModuleLoad, "module", true, TS_MODULE_LOAD_FIELDS)

// One cudaGraphLaunch; the kernels it runs are KernelEvents with graph_id set.
#define TS_GRAPH_LAUNCH_FIELDS(X)                \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, stack_id, kDelta)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, context_id, kConfig)               \
  X(uint32_t, stream_id, kConfig)                \
  X(uint32_t, graph_id, kConfig)
TS_DEFINE_RECORD(GraphLaunchEvent, kGraphLaunch, "graph", true, TS_GRAPH_LAUNCH_FIELDS)

// Time CUPTI or TraceSmith itself spent (buffer flushes, instrumentation).
#define TS_OVERHEAD_FIELDS(X)                    \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, overhead_kind, kConfig)
TS_DEFINE_RECORD(OverheadEvent, kOverhead, "overhead", true, TS_OVERHEAD_FIELDS)

// Records that were lost, and where in time.
#define TS_DROP_FIELDS(X)                        \
  X(uint64_t, ts_ns, kTime)                      \
  X(uint64_t, count, kDelta)                     \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint8_t, reason, kConfig)
TS_DEFINE_RECORD(DropEvent, kDrop, "drop", true, TS_DROP_FIELDS)

// ---- metadata -------------------------------------------------------------

#define TS_DEVICE_FIELDS(X)                      \
  X(uint32_t, device_id, kDelta)                 \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, name_id, kDelta)                   \
  X(uint32_t, uuid_id, kDelta)                   \
  X(uint32_t, sm_count, kDelta)                  \
  X(uint32_t, cc_major, kDelta)                  \
  X(uint32_t, cc_minor, kDelta)                  \
  X(uint64_t, memory_bytes, kDelta)              \
  X(uint32_t, core_clock_khz, kDelta)            \
  X(uint32_t, memory_clock_khz, kDelta)          \
  X(uint32_t, memory_bus_width_bits, kDelta)     \
  X(uint32_t, l2_cache_bytes, kDelta)            \
  X(uint32_t, max_threads_per_block, kDelta)     \
  X(uint32_t, max_shared_per_block, kDelta)      \
  X(uint32_t, max_registers_per_block, kDelta)   \
  X(uint32_t, pci_bus_id, kDelta)
TS_DEFINE_RECORD(Device, kDevice, "device", false, TS_DEVICE_FIELDS)

#define TS_PROCESS_FIELDS(X)                     \
  X(uint32_t, pid, kDelta)                       \
  X(uint32_t, parent_pid, kDelta)                \
  X(uint32_t, name_id, kDelta)                   \
  X(uint32_t, cmdline_id, kDelta)                \
  X(uint32_t, hostname_id, kDelta)               \
  X(int32_t, rank, kDelta)                       \
  X(uint64_t, start_ns, kDelta)                  \
  X(uint64_t, end_ns, kDelta)                    \
  X(int32_t, exit_code, kDelta)                  \
  X(uint32_t, driver_version, kConfig)           \
  X(uint32_t, runtime_version, kConfig)          \
  X(uint32_t, cupti_version, kConfig)
TS_DEFINE_RECORD(Process, kProcess, "process", false, TS_PROCESS_FIELDS)

#define TS_THREAD_FIELDS(X)                      \
  X(uint32_t, tid, kDelta)                       \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, name_id, kDelta)
TS_DEFINE_RECORD(Thread, kThread, "thread", false, TS_THREAD_FIELDS)

// Maps the capture clock (gpu_ns) of one process to host clocks.
// read_window_ns: CLOCK_MONOTONIC time between the host-clock reads taken
// just before and just after the capture clock was read (monotonic_ns and
// realtime_ns are the midpoints of their reads around it), so the instant
// gpu_ns names lies within +-read_window_ns/2 of them. 0 in files written
// before it was recorded (2026-11): the reader then assumes a default bound
// (analysis/job_clock.h).
#define TS_CLOCK_ANCHOR_FIELDS(X)                \
  X(uint64_t, gpu_ns, kDelta)                    \
  X(uint64_t, realtime_ns, kDelta)               \
  X(uint64_t, monotonic_ns, kDelta)              \
  X(uint32_t, pid, kConfig)                      \
  X(uint8_t, phase, kConfig)                     \
  X(uint64_t, read_window_ns, kDelta)
TS_DEFINE_RECORD(ClockAnchor, kClockAnchor, "clock", false, TS_CLOCK_ANCHOR_FIELDS)

// A loaded ELF object (or Python source file) that frames point into.
#define TS_MAPPING_FIELDS(X)                     \
  X(uint32_t, mapping_id, kDelta)                \
  X(uint64_t, start, kDelta)                     \
  X(uint64_t, end, kDelta)                       \
  X(uint64_t, file_offset, kDelta)               \
  X(uint32_t, path_id, kDelta)                   \
  X(uint32_t, build_id_id, kDelta)               \
  X(uint32_t, pid, kConfig)
TS_DEFINE_RECORD(Mapping, kMapping, "mapping", false, TS_MAPPING_FIELDS)

// A frame; its id is its 1-based position in the trace's frame table.
// Native: mapping_id + rel_pc (symbolised later into function/file/line).
// Python: function_id/file_id/line set directly, mapping_id 0.
#define TS_FRAME_FIELDS(X)                       \
  X(uint64_t, rel_pc, kDelta)                    \
  X(uint32_t, mapping_id, kDelta)                \
  X(uint32_t, function_id, kDelta)               \
  X(uint32_t, file_id, kDelta)                   \
  X(uint32_t, line, kDelta)                      \
  X(uint8_t, kind, kConfig)
TS_DEFINE_RECORD(Frame, kFrame, "frame", false, TS_FRAME_FIELDS)

// A node of the call-site tree; its id is its 1-based position. A stack is
// the chain from a node to its root (parent_id 0): leaf first, prefixes shared.
#define TS_STACK_NODE_FIELDS(X)                  \
  X(uint32_t, frame_id, kDelta)                  \
  X(uint32_t, parent_id, kDelta)
TS_DEFINE_RECORD(StackNode, kStackNode, "stacknode", false, TS_STACK_NODE_FIELDS)

// A counter about the capture itself ("cupti_dropped_records", ...).
#define TS_STAT_FIELDS(X)                        \
  X(int64_t, value, kDelta)                      \
  X(uint32_t, name_id, kDelta)                   \
  X(uint32_t, pid, kConfig)                      \
  X(uint8_t, severity, kConfig)
TS_DEFINE_RECORD(Stat, kStat, "stat", false, TS_STAT_FIELDS)

// Free-form key/value metadata (command line, tool version, host, ...).
#define TS_METADATA_FIELDS(X)                    \
  X(uint32_t, key_id, kDelta)                    \
  X(uint32_t, value_id, kDelta)                  \
  X(uint32_t, pid, kConfig)
TS_DEFINE_RECORD(MetadataEntry, kMetadata, "metadata", false, TS_METADATA_FIELDS)
// clang-format on

// X-macro over every record type (for explicit template instantiations).
// clang-format off
#define TS_FOR_EACH_RECORD_TYPE(M)                                                           \
  M(KernelEvent) M(MemcpyEvent) M(MemsetEvent) M(SyncEvent) M(ApiEvent) M(NvtxRangeEvent) \
  M(NvtxMarkerEvent) M(MemoryEvent) M(CounterEvent) M(ModuleLoadEvent) M(GraphLaunchEvent) \
  M(OverheadEvent) M(DropEvent) M(Device) M(Process) M(Thread) M(ClockAnchor) M(Mapping)   \
  M(Frame) M(StackNode) M(Stat) M(MetadataEntry)
// clang-format on

// Calls f.template operator()<T>() for every record type, events first.
template <typename F>
constexpr void ForEachRecordType(F&& f) {
  f.template operator()<KernelEvent>();
  f.template operator()<MemcpyEvent>();
  f.template operator()<MemsetEvent>();
  f.template operator()<SyncEvent>();
  f.template operator()<ApiEvent>();
  f.template operator()<NvtxRangeEvent>();
  f.template operator()<NvtxMarkerEvent>();
  f.template operator()<MemoryEvent>();
  f.template operator()<CounterEvent>();
  f.template operator()<ModuleLoadEvent>();
  f.template operator()<GraphLaunchEvent>();
  f.template operator()<OverheadEvent>();
  f.template operator()<DropEvent>();
  f.template operator()<Device>();
  f.template operator()<Process>();
  f.template operator()<Thread>();
  f.template operator()<ClockAnchor>();
  f.template operator()<Mapping>();
  f.template operator()<Frame>();
  f.template operator()<StackNode>();
  f.template operator()<Stat>();
  f.template operator()<MetadataEntry>();
}

// Label ("kernel") of a table kind, or nullptr when the kind is unknown.
const char* TableKindLabel(TableKind kind);
bool IsKnownTableKind(uint16_t kind);

const char* CopyKindName(uint8_t kind);    // "HtoD", ...
const char* MemoryKindName(uint8_t kind);  // "device", ...
const char* SyncTypeName(uint8_t type);    // "stream_synchronize", ...

}  // namespace tracesmith::model
