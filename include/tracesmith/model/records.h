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
// - stack_id indexes the StackNode table (1-based); 0 means "no stack". While
//   a capture runs, ids at or above kProvisionalStackId are a stack whose
//   interning the writer finishes (stacks/stack_collector.h); a capture
//   writes none to its file.
// - Enumerations mirror CUPTI's numeric values where CUPTI defines them, so
//   capture converts without tables; they are part of the file format.
// - Field 0 of every event is its primary timestamp (start_ns or ts_ns).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tracesmith/model/record_macros.h"
#include "tracesmith/model/type_list.h"

// A test build's extra event types (see TS_RECORD_TABLE).
#ifdef TS_TEST_EXTRA_RECORDS_HEADER
#include TS_TEST_EXTRA_RECORDS_HEADER
#else
#define TS_TEST_EXTRA_EVENT_RECORDS(EVENT)
#endif

namespace tracesmith::model {

// The first provisional stack id (see the conventions above): node ids stay below it.
inline constexpr uint32_t kProvisionalStackId = 0x80000000u;

// ---- the record list -------------------------------------------------------
//
// Every record type, once. TS_RECORD_TABLE(EVENT, METADATA) calls
//   EVENT(Type, kind, number, label, FIELDS)     for each event type, then
//   METADATA(Type, kind, number, label, FIELDS)  for each metadata type:
// its struct, its TableKind enumerator and that enumerator's number, the
// short lower-case name the CLI and Python use ("kernel", "memcpy", ...) and
// its field list (defined below). Everything that lists record types is made
// from this table: the TableKind enumeration, the structs and RecordTraits
// (end of this file), RecordTypes / EventTypes and ForEachRecordType,
// TS_FOR_EACH_RECORD_TYPE, Trace's tables, the capture's RowSink, the
// exporters' EventSink and TimeOrderer. A new record type is one row here
// plus its field list.
//
// - Numbers are persisted in SBT table chunks: never renumber, only append.
//   Event kinds are below kFirstMetadataTableKind (64), metadata kinds from
//   it: code that sees a chunk's kind number tells events by that.
// - The order is the order of every visit (tables written, orderer queues
//   breaking exact ties): events first; append a row at the end of its part.
// - TS_TEST_EXTRA_EVENT_RECORDS(EVENT): extra event types of a test build
//   (tests/format/record_list_test.cc), from the header that the compile
//   definition TS_TEST_EXTRA_RECORDS_HEADER names; empty otherwise.
// clang-format off
#define TS_RECORD_TABLE(EVENT, METADATA)                                             \
  EVENT(KernelEvent,          kKernel,      1,  "kernel",    TS_KERNEL_FIELDS)       \
  EVENT(MemcpyEvent,          kMemcpy,      2,  "memcpy",    TS_MEMCPY_FIELDS)       \
  EVENT(MemsetEvent,          kMemset,      3,  "memset",    TS_MEMSET_FIELDS)       \
  EVENT(SyncEvent,            kSync,        4,  "sync",      TS_SYNC_FIELDS)         \
  EVENT(ApiEvent,             kApi,         5,  "api",       TS_API_FIELDS)          \
  EVENT(NvtxRangeEvent,       kNvtxRange,   6,  "nvtx",      TS_NVTX_RANGE_FIELDS)   \
  EVENT(NvtxMarkerEvent,      kNvtxMarker,  7,  "marker",    TS_NVTX_MARKER_FIELDS)  \
  EVENT(MemoryEvent,          kMemory,      8,  "memory",    TS_MEMORY_FIELDS)       \
  EVENT(CounterEvent,         kCounter,     9,  "counter",   TS_COUNTER_FIELDS)      \
  EVENT(ModuleLoadEvent,      kModuleLoad,  10, "module",    TS_MODULE_LOAD_FIELDS)  \
  EVENT(GraphLaunchEvent,     kGraphLaunch, 11, "graph",     TS_GRAPH_LAUNCH_FIELDS) \
  EVENT(OverheadEvent,        kOverhead,    12, "overhead",  TS_OVERHEAD_FIELDS)     \
  EVENT(DropEvent,            kDrop,        13, "drop",      TS_DROP_FIELDS)         \
  EVENT(PcSampleEvent,        kPcSample,    14, "pcsample",  TS_PC_SAMPLE_FIELDS)    \
  EVENT(KernelTimeoutEvent,   kKernelTimeout, 15, "timeout", TS_KERNEL_TIMEOUT_FIELDS) \
  EVENT(GpuMetricSample,      kGpuMetricSample, 16, "gpumetric", TS_GPU_METRIC_SAMPLE_FIELDS) \
  EVENT(AppCounterEvent,      kAppCounter,  17, "appcounter", TS_APP_COUNTER_FIELDS) \
  EVENT(AppEvent,             kAppEvent,    18, "appevent",  TS_APP_EVENT_FIELDS)    \
  EVENT(NvtxPayloadEvent,     kNvtxPayload, 19, "nvtxpayload", TS_NVTX_PAYLOAD_FIELDS) \
  TS_TEST_EXTRA_EVENT_RECORDS(EVENT)                                                 \
  METADATA(Device,            kDevice,      64, "device",    TS_DEVICE_FIELDS)       \
  METADATA(Process,           kProcess,     65, "process",   TS_PROCESS_FIELDS)      \
  METADATA(Thread,            kThread,      66, "thread",    TS_THREAD_FIELDS)       \
  METADATA(ClockAnchor,       kClockAnchor, 67, "clock",     TS_CLOCK_ANCHOR_FIELDS) \
  METADATA(Mapping,           kMapping,     68, "mapping",   TS_MAPPING_FIELDS)      \
  METADATA(Frame,             kFrame,       69, "frame",     TS_FRAME_FIELDS)        \
  METADATA(StackNode,         kStackNode,   70, "stacknode", TS_STACK_NODE_FIELDS)   \
  METADATA(Stat,              kStat,        71, "stat",      TS_STAT_FIELDS)         \
  METADATA(MetadataEntry,     kMetadata,    72, "metadata",  TS_METADATA_FIELDS)     \
  METADATA(PcLine,            kPcLine,      73, "pcline",    TS_PC_LINE_FIELDS)       \
  METADATA(PcSass,            kPcSass,      74, "pcsass",    TS_PC_SASS_FIELDS)      \
  METADATA(SassCount,         kSassCount,   75, "sasscount", TS_SASS_COUNT_FIELDS)   \
  METADATA(GpuMetric,         kGpuMetric,   76, "gpumetricdesc", TS_GPU_METRIC_FIELDS) \
  METADATA(GraphNode,         kGraphNode,   77, "graphnode", TS_GRAPH_NODE_FIELDS)
// clang-format on

inline constexpr uint16_t kFirstMetadataTableKind = 64;

// The kinds of TS_RECORD_TABLE, persisted in SBT table chunks.
#define TS_TABLE_KIND_ENUMERATOR(Type, kind, number, ...) kind = number,
enum class TableKind : uint16_t {
  TS_RECORD_TABLE(TS_TABLE_KIND_ENUMERATOR, TS_TABLE_KIND_ENUMERATOR)
};
#undef TS_TABLE_KIND_ENUMERATOR

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
// AppEvent::kind.
enum AppEventKind : uint8_t { kAppRange = 1, kAppInstant = 2 };
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

#define TS_NVTX_MARKER_FIELDS(X)                 \
  X(uint64_t, ts_ns, kTime)                      \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint32_t, name_id, kConfig)                  \
  X(uint32_t, domain_id, kConfig)                \
  X(uint32_t, category, kConfig)                 \
  X(uint32_t, color, kConfig)

// The typed data a library attached to an NVTX range or mark (an NVTX
// extended payload: NCCL's communicator, message size, reduction, root on
// each call; communicator size and rank on ncclCommInitRank), decoded by
// the schema the library registered: text_id is "name=value; name=value"
// (capture/nvtx_payloads.h says what is decoded). ts_ns is when the range
// was pushed or the mark made, on thread tid (the range it belongs to is the
// innermost NVTX range of that thread starting at, or just after, it), or
// when it was popped for a payload given at the pop (nvtxRangePopPayload:
// NCCL's ncclCommInitRank).
// schema_id: the library's id of the schema.
#define TS_NVTX_PAYLOAD_FIELDS(X)                \
  X(uint64_t, ts_ns, kTime)                      \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint64_t, schema_id, kConfig)                \
  X(uint32_t, text_id, kDelta)

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

#define TS_COUNTER_FIELDS(X)                     \
  X(uint64_t, ts_ns, kTime)                      \
  X(double, value, kRaw)                         \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, name_id, kConfig)
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

// cubin_hash: the image's identity within its trace (src/capture/cubin_hash.h;
// since 2026-11-29 the whole image up to 64 KiB, above that its size and 32
// sampled 2 KiB blocks, eight lanes; from 2026-11-24 256 KiB / 64 blocks of
// 4 KiB; before, every byte with another function).
#define TS_MODULE_LOAD_FIELDS(X)                 \
  X(uint64_t, ts_ns, kTime)                      \
  X(uint32_t, module_id, kDelta)                 \
  X(uint64_t, cubin_bytes, kDelta)               \
  X(uint64_t, cubin_hash, kRaw)                  \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, context_id, kConfig)               \
  X(uint8_t, op, kConfig)

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

// Time CUPTI or TraceSmith itself spent (buffer flushes, instrumentation).
#define TS_OVERHEAD_FIELDS(X)                    \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, overhead_kind, kConfig)

// Records that were lost, and where in time.
#define TS_DROP_FIELDS(X)                        \
  X(uint64_t, ts_ns, kTime)                      \
  X(uint64_t, count, kDelta)                     \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint8_t, reason, kConfig)

// GPU instruction samples (profile --pc-sampling: CUPTI PC sampling in
// continuous mode, docs/pc-sampling.md): `samples` warp samples of one
// function at one instruction (`pc_offset` into the function, in the cubin
// whose CRC is `cubin_crc`) with one stall reason, collected between start_ns
// and end_ns (two drains of CUPTI's buffers; the GPU clock of kernel rows).
// function_id and stall_id name the function (mangled) and the stall reason
// (CUPTI's name, e.g. "smsp__pcsamp_warps_issue_stalled_long_scoreboard").
// correlation_id is the launch's when CUPTI gives it (kernel-serialized
// mode), 0 in continuous mode: the analysis shares a window's samples among
// the function's launches that ran in it, by GPU time.
#define TS_PC_SAMPLE_FIELDS(X)                   \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint64_t, samples, kDelta)                   \
  X(uint32_t, pc_offset, kDelta)                 \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint64_t, cubin_crc, kConfig)                \
  X(uint32_t, function_id, kConfig)              \
  X(uint32_t, stall_id, kConfig)

// A kernel that ran past `profile --kernel-timeout` (capture/kernel_watchdog.h):
// the function function_id (mangled; demangled_id: its demangled name), launched at launch_ns by the call with
// correlation_id (its host stack: stack_id), running since start_ns as far
// as its samples and the completions delivered tell, found still running at
// end_ns with `samples` GPU instruction samples since start_ns (where its
// warps were: the function's PcSample rows, which the drain windows in
// [start_ns, end_ns] hold).
// ended: 1 when the capture then ended the program (--on-kernel-timeout exit).
#define TS_KERNEL_TIMEOUT_FIELDS(X)              \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint64_t, launch_ns, kRelStart)              \
  X(uint64_t, timeout_ns, kConfig)               \
  X(uint64_t, samples, kDelta)                   \
  X(uint32_t, correlation_id, kDelta)            \
  X(uint32_t, stack_id, kConfig)                 \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, function_id, kConfig)              \
  X(uint32_t, demangled_id, kConfig)             \
  X(uint8_t, ended, kConfig)

// A GPU hardware metric sampled over time (profile --gpu-metrics: CUPTI PM
// sampling, docs/capture.md "GPU metrics"): the value of metric `metric_id`
// (the GpuMetric row of the same pid and id names it) on device_id over one
// sampling interval, [start_ns, end_ns] (CUPTI's sample start and end
// timestamps, the GPU clock of kernel rows). Values as CUPTI evaluates them:
// a percentage, a rate or a count, per the metric's unit.
#define TS_GPU_METRIC_SAMPLE_FIELDS(X)           \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(double, value, kRaw)                         \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint32_t, metric_id, kConfig)

// A value the program itself reported (`tracesmith.counter("loss", v)`,
// include/tracesmith/app/app.h's ts_app_counter): counter `name_id` is `value` from
// ts_ns on, set by thread `tid` of `pid` (the capture clock, as host rows).
#define TS_APP_COUNTER_FIELDS(X)                 \
  X(uint64_t, ts_ns, kTime)                      \
  X(double, value, kRaw)                         \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint32_t, name_id, kConfig)

// A range or an instant the program marked (`with tracesmith.range("eval")`,
// `tracesmith.instant("checkpoint", epoch=3)`, app.h): [start_ns, end_ns] on
// thread `tid` of `pid`; an instant (kind kAppInstant) has end_ns == start_ns.
// args_id: its arguments as the text of one JSON object ("{\"epoch\": 3}";
// 0: none).
#define TS_APP_EVENT_FIELDS(X)                   \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, tid, kConfig)                      \
  X(uint32_t, name_id, kConfig)                  \
  X(uint32_t, args_id, kConfig)                  \
  X(uint8_t, kind, kConfig)

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

#define TS_THREAD_FIELDS(X)                      \
  X(uint32_t, tid, kDelta)                       \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, name_id, kDelta)

// Maps the capture clock (gpu_ns) of one process to host clocks.
// read_window_ns: CLOCK_MONOTONIC time between the host-clock reads taken
// just before and just after the capture clock was read (monotonic_ns and
// realtime_ns are the midpoints of their reads around it), so the instant
// gpu_ns names lies within +-read_window_ns/2 of them. 0 in files written
// before it was recorded (2026-11): the reader then assumes a default bound
// (job/job_clock.h).
#define TS_CLOCK_ANCHOR_FIELDS(X)                \
  X(uint64_t, gpu_ns, kDelta)                    \
  X(uint64_t, realtime_ns, kDelta)               \
  X(uint64_t, monotonic_ns, kDelta)              \
  X(uint32_t, pid, kConfig)                      \
  X(uint8_t, phase, kConfig)                     \
  X(uint64_t, read_window_ns, kDelta)

// A loaded ELF object (or Python source file) that frames point into.
#define TS_MAPPING_FIELDS(X)                     \
  X(uint32_t, mapping_id, kDelta)                \
  X(uint64_t, start, kDelta)                     \
  X(uint64_t, end, kDelta)                       \
  X(uint64_t, file_offset, kDelta)               \
  X(uint32_t, path_id, kDelta)                   \
  X(uint32_t, build_id_id, kDelta)               \
  X(uint32_t, pid, kConfig)

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

// A node of the call-site tree; its id is its 1-based position. A stack is
// the chain from a node to its root (parent_id 0): leaf first, prefixes shared.
#define TS_STACK_NODE_FIELDS(X)                  \
  X(uint32_t, frame_id, kDelta)                  \
  X(uint32_t, parent_id, kDelta)

// A counter about the capture itself ("cupti_dropped_records", ...).
#define TS_STAT_FIELDS(X)                        \
  X(int64_t, value, kDelta)                      \
  X(uint32_t, name_id, kDelta)                   \
  X(uint32_t, pid, kConfig)                      \
  X(uint8_t, severity, kConfig)

// Where a sampled instruction comes from: the source file and line of
// `pc_offset` in `function_id` of the cubin `cubin_crc`, from the module's
// line table (CUPTI's SASS-to-source correlation; needs -lineinfo or -G).
// file_id is 0 when the module has no line information for it.
#define TS_PC_LINE_FIELDS(X)                     \
  X(uint32_t, pc_offset, kDelta)                 \
  X(uint32_t, line, kDelta)                      \
  X(uint32_t, pid, kConfig)                      \
  X(uint64_t, cubin_crc, kConfig)                \
  X(uint32_t, function_id, kConfig)              \
  X(uint32_t, file_id, kConfig)

// The SASS text of a sampled instruction (nvdisasm's, without its offset and
// final ';': "LDG.E.128 R4, desc[UR4][R2.64]"), written after the capture by
// `profile` or `symbolize` from the module's cubin (docs/pc-sampling.md).
#define TS_PC_SASS_FIELDS(X)                     \
  X(uint32_t, pc_offset, kDelta)                 \
  X(uint32_t, text_id, kDelta)                   \
  X(uint32_t, pid, kConfig)                      \
  X(uint64_t, cubin_crc, kConfig)                \
  X(uint32_t, function_id, kConfig)

// How many times an instruction ran (`profile --sass-counts`, CUPTI's SASS
// metrics): `pc_offset` of `function_id` (mangled) in the cubin `cubin_crc`
// executed `executed` times by warps (smsp__sass_inst_executed) and
// `thread_executed` times by threads (smsp__sass_thread_inst_executed; 0 when
// not collected), on device `device_id`. The counts are cumulative, not per
// launch: CUPTI gives no launch with them, only the sum over every launch of
// the function since its context enabled counting, up to the flush that wrote
// the row (the end of the capture, or the context's destruction). Rows with
// the same (pid, device, cubin, function, pc) add up. Source lines and SASS
// text come from the PcLine / PcSass rows of the same instruction.
#define TS_SASS_COUNT_FIELDS(X)                  \
  X(uint32_t, pc_offset, kDelta)                 \
  X(uint64_t, executed, kDelta)                  \
  X(uint64_t, thread_executed, kDelta)           \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, device_id, kConfig)                \
  X(uint64_t, cubin_crc, kConfig)                \
  X(uint32_t, function_id, kConfig)

// A metric of the GpuMetricSample rows: its id in process `pid` (1-based,
// per process), CUPTI's name of it (name_id: "sm__cycles_active.avg"), a
// short plain name (label_id: "SM active") and its unit (unit_id: "%",
// "bytes/s", "cycles"; empty when unknown).
#define TS_GPU_METRIC_FIELDS(X)                  \
  X(uint32_t, metric_id, kDelta)                 \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, name_id, kDelta)                   \
  X(uint32_t, label_id, kDelta)                  \
  X(uint32_t, unit_id, kDelta)

// Where a CUDA graph node came from (the capture's GRAPHNODE_CREATED and
// GRAPHNODE_CLONED callbacks; host stacks on): a node made by a call of the
// program (a launch into a capturing stream, cudaGraphAdd*Node) has
// origin_node_id 0 and stack_id the host stack of that call; a node cloned
// from another (cudaGraphInstantiate clones each node of the graph into the
// executable graph, whose node ids the kernel rows carry as graph_node_id;
// cudaGraphClone) has origin_node_id the node it was cloned from and
// stack_id 0. A kernel replayed from a graph is thus traced back to the
// line that put it in the graph (analysis: CompactTrace::StackOfOp).
#define TS_GRAPH_NODE_FIELDS(X)                  \
  X(uint64_t, graph_node_id, kDelta)             \
  X(uint64_t, origin_node_id, kDelta)            \
  X(uint32_t, stack_id, kDelta)                  \
  X(uint32_t, pid, kConfig)

// Free-form key/value metadata (command line, tool version, host, ...).
#define TS_METADATA_FIELDS(X)                    \
  X(uint32_t, key_id, kDelta)                    \
  X(uint32_t, value_id, kDelta)                  \
  X(uint32_t, pid, kConfig)
// clang-format on

// ---- what the record list makes ------------------------------------------

// The structs and their RecordTraits.
#define TS_DEFINE_EVENT_RECORD(Type, kind, number, label, FIELDS) \
  TS_DEFINE_RECORD(Type, kind, label, true, FIELDS)
#define TS_DEFINE_METADATA_RECORD(Type, kind, number, label, FIELDS) \
  TS_DEFINE_RECORD(Type, kind, label, false, FIELDS)
TS_RECORD_TABLE(TS_DEFINE_EVENT_RECORD, TS_DEFINE_METADATA_RECORD)
#undef TS_DEFINE_EVENT_RECORD
#undef TS_DEFINE_METADATA_RECORD

// X-macros over every record type and over the event types, for code that
// must name each type (explicit instantiations, virtual overloads). M is
// called as M(Type, kind, number, label, FIELDS): take it as M(Type, ...).
#define TS_NO_RECORD(...)
#define TS_FOR_EACH_RECORD_TYPE(M) TS_RECORD_TABLE(M, M)
#define TS_FOR_EACH_EVENT_TYPE(M) TS_RECORD_TABLE(M, TS_NO_RECORD)

// The same lists as types: every record type (events first), the events.
#define TS_RECORD_TYPE_ENTRY(Type, ...) , Type
using RecordTypes =
    TypeListTail<TypeList<void TS_RECORD_TABLE(TS_RECORD_TYPE_ENTRY, TS_RECORD_TYPE_ENTRY)>>;
using EventTypes = TypeListTail<TypeList<void TS_RECORD_TABLE(TS_RECORD_TYPE_ENTRY, TS_NO_RECORD)>>;
#undef TS_RECORD_TYPE_ENTRY

// Calls f.template operator()<T>() for every record type, events first.
template <typename F>
constexpr void ForEachRecordType(F&& f) {
  ForEachType(RecordTypes{}, f);
}

// The largest kind number of the event types and of all types (arrays
// indexed by a kind).
inline constexpr uint16_t kMaxEventTableKind = [] {
  uint16_t max = 0;
  ForEachType(EventTypes{}, [&]<typename T>() {
    max = std::max(max, static_cast<uint16_t>(RecordTraits<T>::kKind));
  });
  return max;
}();
inline constexpr uint16_t kMaxTableKind = [] {
  uint16_t max = 0;
  ForEachRecordType(
      [&]<typename T>() { max = std::max(max, static_cast<uint16_t>(RecordTraits<T>::kKind)); });
  return max;
}();

// What the file format and the visits rely on: events first, event kinds
// below kFirstMetadataTableKind and metadata kinds from it, no kind number
// or label twice.
static_assert(
    [] {
      bool ok = true, metadata_seen = false;
      ForEachRecordType([&]<typename T>() {
        const auto kind = static_cast<uint16_t>(RecordTraits<T>::kKind);
        metadata_seen = metadata_seen || !RecordTraits<T>::kIsEvent;
        ok = ok && RecordTraits<T>::kIsEvent != metadata_seen &&
             RecordTraits<T>::kIsEvent == (kind < kFirstMetadataTableKind) && kind != 0;
        ForEachRecordType([&]<typename U>() {
          if constexpr (!std::is_same_v<T, U>)
            ok = ok && RecordTraits<T>::kKind != RecordTraits<U>::kKind &&
                 std::string_view(RecordTraits<T>::kLabel) != RecordTraits<U>::kLabel;
        });
      });
      return ok;
    }(),
    "TS_RECORD_TABLE: events first, event kinds < 64 <= metadata kinds, kinds and labels unique");

// Label ("kernel") of a table kind, or nullptr when the kind is unknown.
const char* TableKindLabel(TableKind kind);
bool IsKnownTableKind(uint16_t kind);

const char* CopyKindName(uint8_t kind);    // "HtoD", ...
const char* MemoryKindName(uint8_t kind);  // "device", ...
const char* SyncTypeName(uint8_t type);    // "stream_synchronize", ...

}  // namespace tracesmith::model
