// The SQLite export's schema: the tables, columns and enum tables of
// `nsys export --type sqlite` (names, column order and enum ids as nsys
// writes them), and the conversions from the TraceSmith model's CUPTI
// numbering to nsys' where the two differ. docs/export.md lists every column
// and where it comes from.
#pragma once

#include <cstdint>

#include "tracesmith/model/event_names.h"

namespace tracesmith::exporter::sqlite {

constexpr const char* kSchema = R"SQL(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE EXPORT_META_DATA (name TEXT NOT NULL, value TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER NOT NULL, duration INTEGER NOT NULL,
  startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT NOT NULL, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER,
  clockRate INTEGER, smCount INTEGER, uuid TEXT, computeMajor INTEGER, computeMinor INTEGER,
  maxThreadsPerBlock INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER);
CREATE TABLE TARGET_INFO_CUDA_STREAM (streamId INTEGER NOT NULL, hwId INTEGER, vmId INTEGER,
  processId INTEGER NOT NULL, contextId INTEGER NOT NULL, priority INTEGER, flag INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL REFERENCES StringIds(id), priority INTEGER,
  globalTid INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL REFERENCES StringIds(id),
  shortName INTEGER NOT NULL REFERENCES StringIds(id), mangledName INTEGER REFERENCES StringIds(id),
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  clusterX INTEGER, clusterY INTEGER, clusterZ INTEGER,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  graphId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,
  callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
  graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER,
  deviceId INTEGER, contextId INTEGER, address INTEGER NOT NULL, pc INTEGER, bytes INTEGER NOT NULL,
  memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT,
  correlationId INTEGER, streamId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER REFERENCES StringIds(id), domainId INTEGER,
  uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE PROFILER_OVERHEAD (start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER,
  nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,
  overheadType INTEGER);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUPTI_STREAM_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUPTI_OVERHEAD_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
)SQL";

// The enum tables' rows. Ids and names are nsys' (they differ from CUPTI's
// numbering for memory kinds and overhead kinds: see the conversions below).
constexpr const char* kEnumRows = R"SQL(
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0,'CUDA_MEMCPY_KIND_UNKNOWN','Unknown'),
  (1,'CUDA_MEMCPY_KIND_HTOD','Host-to-Device'),(2,'CUDA_MEMCPY_KIND_DTOH','Device-to-Host'),
  (3,'CUDA_MEMCPY_KIND_HTOA','Host-to-Array'),(4,'CUDA_MEMCPY_KIND_ATOH','Array-to-Host'),
  (5,'CUDA_MEMCPY_KIND_ATOA','Array-to-Array'),(6,'CUDA_MEMCPY_KIND_ATOD','Array-to-Device'),
  (7,'CUDA_MEMCPY_KIND_DTOA','Device-to-Array'),(8,'CUDA_MEMCPY_KIND_DTOD','Device-to-Device'),
  (9,'CUDA_MEMCPY_KIND_HTOH','Host-to-Host'),(10,'CUDA_MEMCPY_KIND_PTOP','Peer-to-Peer');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),
  (1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'),(2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),
  (3,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'),(4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),
  (5,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),
  (6,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static'),
  (7,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown');
INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES
  (0,'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION','Allocation'),
  (1,'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION','Deallocation');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (0,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN','Unknown'),
  (1,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE','Event sync'),
  (2,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT','Stream wait sync'),
  (3,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE','Stream sync'),
  (4,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE','Context sync');
INSERT INTO ENUM_CUPTI_STREAM_TYPE VALUES (1,'CUPTI_ACTIVITY_STREAM_TYPE_DEFAULT','Default stream'),
  (2,'CUPTI_ACTIVITY_STREAM_TYPE_NON_BLOCKING','Non-blocking stream'),
  (3,'CUPTI_ACTIVITY_STREAM_TYPE_NULL','Null stream');
INSERT INTO ENUM_CUPTI_OVERHEAD_TYPE VALUES (1,'OVERHEAD_UNKNOWN','Unknown'),
  (2,'OVERHEAD_DRIVER_COMPILER','Driver JIT compiler'),
  (3,'OVERHEAD_CUPTI_BUFFER_FLUSH','Buffer flush'),
  (4,'OVERHEAD_CUPTI_INSTRUMENTATION','Instrumentation'),
  (5,'OVERHEAD_CUPTI_RESOURCE','Resource'),
  (6,'OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING','Runtime module loading'),
  (7,'OVERHEAD_LAZY_FUNCTION_LOADING','Lazy function loading'),
  (8,'OVERHEAD_COMMAND_BUFFER_FULL','Command buffer full'),
  (9,'OVERHEAD_ACTIVITY_BUFFER_REQUEST','Activity buffer request'),
  (10,'OVERHEAD_UVM_ACTIVITY_INIT','UVM activity init'),
  (11,'TRACESMITH_PC_SAMPLING_DRAIN','TraceSmith PC sampling drain');
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (34,'NvtxMark','NvtxMark'),
  (59,'NvtxPushPopRange','NvtxPushPopRange'),(60,'NvtxStartEndRange','NvtxStartEndRange'),
  (75,'NvtxDomainCreate','NvtxDomainCreate');
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (0,'TRACE_PROCESS_EVENT_CUDA_RUNTIME','CUDA runtime'),
  (1,'TRACE_PROCESS_EVENT_CUDA_DRIVER','CUDA driver');
)SQL";

constexpr const char* kIndexes = R"SQL(
CREATE INDEX idx_kernel_start ON CUPTI_ACTIVITY_KIND_KERNEL (start);
CREATE INDEX idx_kernel_corr ON CUPTI_ACTIVITY_KIND_KERNEL (correlationId);
CREATE INDEX idx_kernel_name ON CUPTI_ACTIVITY_KIND_KERNEL (shortName);
CREATE INDEX idx_runtime_corr ON CUPTI_ACTIVITY_KIND_RUNTIME (correlationId);
CREATE INDEX idx_runtime_tid_start ON CUPTI_ACTIVITY_KIND_RUNTIME (globalTid, start);
CREATE INDEX idx_memcpy_corr ON CUPTI_ACTIVITY_KIND_MEMCPY (correlationId);
CREATE INDEX idx_memset_corr ON CUPTI_ACTIVITY_KIND_MEMSET (correlationId);
CREATE INDEX idx_nvtx_start ON NVTX_EVENTS (start);
)SQL";

// GPU instruction samples (profile --pc-sampling): TraceSmith's own tables,
// not part of nsys' layout, made only when the trace has samples. Added up
// over the whole trace (continuous sampling gives no launch its own samples):
// per function a summary, per (function, instruction, stall reason) the
// samples with the instruction's line and SASS. docs/export.md.
constexpr const char* kPcSampleSchema = R"SQL(
CREATE TABLE TRACESMITH_PC_FUNCTIONS (globalPid INTEGER NOT NULL,
  functionId INTEGER NOT NULL REFERENCES StringIds(id), nameId INTEGER NOT NULL REFERENCES StringIds(id),
  samples INTEGER NOT NULL, samplesPct REAL NOT NULL, topStallId INTEGER REFERENCES StringIds(id),
  topStallPct REAL, hottestFileId INTEGER REFERENCES StringIds(id), hottestLine INTEGER,
  hottestLinePct REAL);
CREATE TABLE TRACESMITH_PC_SAMPLES (globalPid INTEGER NOT NULL,
  functionId INTEGER NOT NULL REFERENCES StringIds(id), cubinCrc INTEGER NOT NULL,
  pcOffset INTEGER NOT NULL, stallId INTEGER NOT NULL REFERENCES StringIds(id),
  samples INTEGER NOT NULL, notIssued INTEGER NOT NULL, fileId INTEGER REFERENCES StringIds(id),
  line INTEGER, sassId INTEGER REFERENCES StringIds(id));
CREATE INDEX idx_pc_samples_function ON TRACESMITH_PC_SAMPLES (globalPid, functionId);
)SQL";

// GPU metrics (profile --gpu-metrics), made only when the trace has them.
// GPU_METRICS and TARGET_INFO_GPU_METRICS in the layout public queries of
// nsys exports use (GPU_METRICS: timestamp, typeId, metricId, value, joined
// to TARGET_INFO_GPU_METRICS on typeId and metricId; the GPU is
// typeId & 0xff), with TraceSmith's columns after them: value REAL (nsys
// stores integers), each sample's end and process, and the metric's CUPTI
// name and unit. typeId = process index << 8 | device. docs/export.md.
constexpr const char* kGpuMetricSchema = R"SQL(
CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL,
  typeName TEXT NOT NULL, metricId INTEGER NOT NULL, metricName TEXT NOT NULL,
  cuptiName TEXT NOT NULL, unit TEXT, globalPid INTEGER);
CREATE TABLE GPU_METRICS (timestamp INTEGER NOT NULL, typeId INTEGER NOT NULL,
  metricId INTEGER NOT NULL, value REAL NOT NULL, end INTEGER NOT NULL, globalPid INTEGER);
CREATE INDEX idx_gpu_metrics ON GPU_METRICS (typeId, metricId, timestamp);
)SQL";

// The program's own counters (tracesmith.counter, app.h), made at the first
// sample. nsys' export (schema 3.16.1, as above) has no table for a program's
// counter samples, so they go to a TraceSmith table in its conventions, as the
// GPU metric samples do: timestamp from the session start, globalTid (pid <<
// 24 | tid), nameId into StringIds, the value as set (REAL). docs/export.md.
constexpr const char* kAppCounterSchema = R"SQL(
CREATE TABLE TRACESMITH_APP_COUNTERS (timestamp INTEGER NOT NULL, globalTid INTEGER NOT NULL,
  nameId INTEGER NOT NULL REFERENCES StringIds(id), value REAL NOT NULL);
CREATE INDEX idx_app_counters ON TRACESMITH_APP_COUNTERS (nameId, timestamp);
)SQL";

// ENUM_NSYS_EVENT_TYPE ids of NVTX_EVENTS rows.
constexpr int kNvtxMark = 34, kNvtxPushPop = 59, kNvtxStartEnd = 60, kNvtxDomainCreate = 75;
// ENUM_NSYS_EVENT_CLASS ids of CUPTI_ACTIVITY_KIND_RUNTIME rows.
constexpr int kEventClassRuntime = 0, kEventClassDriver = 1;

// CUpti_ActivityMemoryKind (UNKNOWN 0, PAGEABLE 1 ... MANAGED_STATIC 7) ->
// nsys' ENUM_CUDA_MEM_KIND (PAGEABLE 0 ... MANAGED_STATIC 6, UNKNOWN 7).
constexpr int NsysMemoryKind(uint32_t cupti_kind) {
  return cupti_kind >= 1 && cupti_kind <= 7 ? static_cast<int>(cupti_kind) - 1 : 7;
}

// CUpti_ActivityOverheadKind (UNKNOWN 0, DRIVER_COMPILER 1, then n << 16 for
// BUFFER_FLUSH 1 ... UVM_ACTIVITY_INIT 8) -> ENUM_CUPTI_OVERHEAD_TYPE id
// (1 + the kind's position in CUPTI's list: nsys exports show 2 compiler,
// 3 buffer flush, 4 instrumentation, 6 runtime module loading).
// TraceSmith's PC sampling drains: the label after CUPTI's.
constexpr int NsysOverheadType(uint32_t cupti_kind) {
  if (cupti_kind == model::kOverheadPcSamplingDrain) return 11;
  if (cupti_kind <= 1) return static_cast<int>(cupti_kind) + 1;
  uint32_t n = cupti_kind >> 16;
  return (cupti_kind & 0xffff) == 0 && n >= 1 && n <= 8 ? static_cast<int>(n) + 2 : 1;
}

// Labels of ENUM_CUPTI_OVERHEAD_TYPE by id (index 0 unused): PROFILER_OVERHEAD's
// nameId is the label of its type.
constexpr const char* kOverheadLabels[] = {
    "",
    "Unknown",
    "Driver JIT compiler",
    "Buffer flush",
    "Instrumentation",
    "Resource",
    "Runtime module loading",
    "Lazy function loading",
    "Command buffer full",
    "Activity buffer request",
    "UVM activity init",
    "TraceSmith PC sampling drain",
};

}  // namespace tracesmith::exporter::sqlite
