// Replay payloads: what a GPU replay needs to re-run captured kernel
// launches, stored as chunks of the reserved types 0x40-0x4f inside an
// ordinary SBT file (readers that do not know them skip them). The byte
// layout is specified in docs/replay-format.md. Part of format/ (capture/
// writes these chunks, replay/ reads them); the namespace is replay's.
//
//   capture info  device name, compute capability, driver version
//   blob piece    content-addressed bytes (module images, memory contents),
//                 split into pieces of at most kBlobPieceBytes; written once
//                 per content hash, so an unchanged allocation or a module
//                 used by many launches is stored once
//   module        a module image (cubin/fatbin/PTX) = blob hash + kind
//   launch        function name, module hash, grid/block/cluster, dynamic
//                 shared memory, raw parameter buffer with each parameter's
//                 offset and size, the kernel's time in the program
//   snapshot      device memory [address, address+size) before or after a
//                 launch = blob hash
//   stream op     the program's other stream work between recorded launches
//                 (copies, memsets, event record/wait, synchronizations) and
//                 the streams it used, for range replay
//   graph launch  a cuGraphLaunch: its nodes (kernel, memset, memcpy, empty)
//                 in topological order with their dependencies; snapshots
//                 refer to its launch index like a kernel launch's
//
// Chunks are zstd-compressed by the SBT writer; memory images (often zeros)
// compress well. Everything read is bounds-checked; errors name the chunk's
// file offset and the byte inside its payload.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/format/memory_scope.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {

// Persisted chunk types (a sub-range of format::kFirstRawChunkType..).
enum class PayloadChunk : uint16_t {
  kCaptureInfo = 0x40,
  kBlobPiece = 0x41,
  kModule = 0x42,
  kLaunch = 0x43,
  kSnapshot = 0x44,
  kStreamOp = 0x45,
  kGraphLaunch = 0x46,
};
const char* PayloadChunkName(uint16_t type);

// 16 MiB: well under the SBT 64 MiB chunk limit, and small enough that a
// reader holds one compressed piece at a time.
inline constexpr uint64_t kBlobPieceBytes = 16u << 20;
// Refuse larger blobs before allocating (a module or one allocation image).
inline constexpr uint64_t kMaxBlobBytes = 64ull << 30;
inline constexpr uint32_t kMaxParams = 4096;       // CUDA allows 32 KiB of params
inline constexpr uint32_t kMaxParamBytes = 32764;  // cuLaunchKernel's limit on Hopper

// 64-bit content hash (documented in docs/replay-format.md so other writers
// can produce it): 8 bytes at a time, multiply-xorshift mixing.
uint64_t ContentHash(std::span<const uint8_t> bytes);

enum class ImageKind : uint8_t { kUnknown = 0, kCubin = 1, kFatbin = 2, kPtx = 3 };

struct CaptureInfo {
  std::string device_name;
  uint32_t cc_major = 0, cc_minor = 0;  // compute capability of the capture GPU
  uint32_t driver_version = 0;          // cuDriverGetVersion
  std::string tool;                     // what wrote the payload
};

struct ModuleRecord {
  uint64_t hash = 0;  // blob holding the image
  ImageKind kind = ImageKind::kUnknown;
  std::string name;  // informational (path, "embedded", ...)
};

struct ParamInfo {
  uint32_t offset = 0, size = 0;
};

// A CUlaunchAttribute other than the cluster dimension: its id and the raw
// bytes of its value (CUlaunchAttributeValue, at most 64 bytes).
struct LaunchAttribute {
  uint32_t id = 0;
  std::vector<uint8_t> value;
};
inline constexpr uint32_t kMaxLaunchAttributes = 32;
// "cooperative", "priority", ... for CUlaunchAttributeID values ("attribute N" otherwise).
std::string LaunchAttributeName(uint32_t id);
inline constexpr uint32_t kMaxLaunchAttributeBytes = 64;

// What the capture of one launch's memory left out (MemoryScope::kReachable):
// reached allocations over the byte budget or past the depth limit, and
// pointer-like words it could not resolve (driver lookups over their budget).
struct MemoryCoverage {
  MemoryScope scope = MemoryScope::kUnknown;
  uint32_t ranges_over_budget = 0;
  uint64_t bytes_over_budget = 0;
  uint32_t ranges_past_depth = 0;
  uint64_t words_unresolved = 0;
  bool complete() const {
    return ranges_over_budget == 0 && ranges_past_depth == 0 && words_unresolved == 0;
  }
};

struct LaunchRecord {
  uint64_t index = 0;        // launch index in the capture (unique)
  uint64_t module_hash = 0;  // ModuleRecord::hash
  std::string function;      // mangled name, for cuModuleGetFunction
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {0, 0, 0};
  uint32_t dynamic_shared_bytes = 0;
  uint32_t stream_id = 0;    // informational
  uint64_t recorded_ns = 0;  // the kernel's duration inside the program (0: unknown)
  // Memory ranges snapshotted for this launch (each has a before and an
  // after image): lets a reader tell "touches no memory" from "truncated".
  uint32_t snapshot_ranges = 0;
  std::vector<uint8_t> params;  // the raw parameter buffer
  std::vector<ParamInfo> param_info;
  // CUPTI correlation id of the launch in the same file's trace (0: none):
  // replay takes the kernel's time in the program from that kernel row.
  // Optional trailing field (files without it read as 0).
  uint32_t correlation_id = 0;
  // Launch attributes besides the cluster dimension (cooperative, priority,
  // access policy window, ...). Optional trailing field after correlation_id.
  std::vector<LaunchAttribute> attributes;
  // How its memory was chosen and what was left out. Optional trailing
  // fields after the attributes (older files read kUnknown).
  MemoryCoverage coverage;
};

enum class SnapshotPhase : uint8_t { kBefore = 0, kAfter = 1 };

// Why a range was snapshotted.
enum class RangeSource : uint8_t {
  kParameter = 0,  // a parameter word points into it
  kPointer = 1,    // a pointer stored in another snapshotted range points into it
  kRequested = 2,  // --replay-ranges
  kLive = 3,       // --replay-memory all: a live allocation
};
inline constexpr uint8_t kMaxRangeSource = 3;

struct SnapshotOrigin {
  RangeSource source = RangeSource::kParameter;
  // kPointer: the snapshotted range (its address) holding the pointers, the
  // byte offsets of the first and last of them there, how many, and the
  // depth (1: reached from a parameter's allocation).
  uint64_t via = 0;
  uint64_t first_offset = 0, last_offset = 0;
  uint64_t pointers = 0;
  uint32_t depth = 0;
};

struct SnapshotRecord {
  uint64_t launch_index = 0;
  SnapshotPhase phase = SnapshotPhase::kBefore;
  uint64_t address = 0, size = 0;
  uint64_t hash = 0;  // blob with `size` bytes
  // Optional trailing fields, written for "before" snapshots that are not
  // kParameter (files without them read kParameter).
  SnapshotOrigin origin;
};

// Stream ids in launch and stream-op records: the program's streams in the
// order first seen; 0 and 1 are the legacy and the per-thread default stream.
inline constexpr uint32_t kLegacyStream = 0, kPerThreadStream = 1;

enum class StreamOpKind : uint8_t {
  kStreamInfo = 1,       // stream `stream` first seen: `flags` (CU_STREAM_*), `value` = priority
  kCopyHtoD = 2,         // bytes from the `data_hash` blob to dst
  kCopyDtoD = 3,         // src to dst, device memory
  kCopyDtoH = 4,         // src to the host (no device effect; replayed for the ordering)
  kMemset = 5,           // dst: `bytes` / element_size elements of `value`
  kEventRecord = 6,      // event `event` recorded on `stream`
  kStreamWaitEvent = 7,  // `stream` waits for `event`
  kStreamSync = 8,       // the host waited for `stream`
  kEventSync = 9,        // the host waited for `event`
  kContextSync = 10,     // the host waited for the context
};
inline constexpr uint8_t kMaxStreamOpKind = 10;
const char* StreamOpKindName(StreamOpKind kind);

struct StreamOpRecord {
  // The op happened after launch before_launch - 1 and before launch
  // before_launch (launch indices as in LaunchRecord::index); `seq` orders
  // the ops of one capture.
  uint64_t before_launch = 0, seq = 0;
  StreamOpKind kind = StreamOpKind::kStreamInfo;
  uint32_t stream = 0;  // stream id (see kLegacyStream)
  uint32_t event = 0;   // event id, 1-based (0: none)
  uint32_t flags = 0;
  uint64_t dst = 0, src = 0, bytes = 0;
  int64_t value = 0;         // memset value; kStreamInfo: priority
  uint8_t element_size = 0;  // memset: 1, 2 or 4
  uint64_t data_hash = 0;    // kCopyHtoD: blob with `bytes` bytes
};

// CUDA graph launches (0x46). The nodes of the launched graph (child graphs
// flattened) in a topological order: each node's dependencies are indices of
// earlier nodes. Event record/wait nodes order work inside the graph only
// and are recorded as empty nodes.
struct DeviceSpan {
  uint64_t address = 0, size = 0;
};
enum class GraphNodeKind : uint8_t { kKernel = 1, kMemset = 2, kMemcpy = 3, kEmpty = 4 };
inline constexpr uint8_t kMaxGraphNodeKind = 4;
const char* GraphNodeKindName(GraphNodeKind kind);
// 65536: far above graphs seen in practice (PyTorch's largest captured
// graphs hold a few thousand nodes); bounds what a reader allocates.
inline constexpr uint32_t kMaxGraphNodes = 65536;

struct GraphNodeRecord {
  GraphNodeKind kind = GraphNodeKind::kEmpty;
  std::vector<uint32_t> dependencies;  // indices of earlier nodes, each < this node's
  // kKernel: module_hash, function, grid, block, cluster, dynamic_shared_bytes,
  // params, param_info and attributes are used (the other fields are not stored).
  LaunchRecord kernel;
  // kMemset: `height` rows of `width` elements of `element_size` bytes
  // (1, 2 or 4) holding `value`, rows `dst_pitch` bytes apart.
  // kMemcpy: `height` rows of `width` bytes from src to dst, rows
  // `src_pitch` / `dst_pitch` bytes apart (device to device).
  uint64_t dst = 0, src = 0;
  uint64_t dst_pitch = 0, src_pitch = 0;
  uint64_t width = 0, height = 1;
  uint32_t value = 0;
  uint8_t element_size = 0;
  // The device bytes a memset or memcpy node writes / a memcpy reads, as
  // one span from the first to the last byte (pitch gaps included); size 0
  // for other kinds.
  DeviceSpan Written() const;
  DeviceSpan Read() const;
};

struct GraphLaunchRecord {
  uint64_t index = 0;           // launch index, unique among launches and graph launches
  uint32_t correlation_id = 0;  // cuGraphLaunch's; the graph's kernel rows carry it
  uint32_t stream_id = 0;       // as LaunchRecord::stream_id
  uint64_t recorded_ns = 0;     // the graph's extent in the program (0: unknown)
  uint32_t snapshot_ranges = 0;
  MemoryCoverage coverage;
  std::vector<GraphNodeRecord> nodes;  // topological order
  // "3 kernels, 1 memset, 1 memcpy, 2 empty"
  std::string DescribeNodes() const;
};

// The nodes `node` depends on, directly or not, in increasing index order
// (nodes are stored in topological order, so that is an order to run them in).
std::vector<uint32_t> GraphAncestors(const GraphLaunchRecord& graph, uint32_t node);

// Node replay: which nodes run once before node `node` (its ancestors, to
// rebuild its inputs) and which once after its last replay (every other
// node but itself): both in index order, a valid order to run them in.
struct GraphNodeSplit {
  std::vector<bool> before, after;  // by node index
};
GraphNodeSplit SplitForNodeReplay(const GraphLaunchRecord& graph, uint32_t node);

// A topological order of n nodes given edges (from, to), by Kahn's
// algorithm, nodes with no pending dependency taken in index order;
// FailedPrecondition on a cycle, InvalidArgument on an edge out of range.
StatusOr<std::vector<uint32_t>> TopologicalOrder(
    uint32_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges);

// The whole payload of one file, read into memory.
struct ReplayCapture {
  CaptureInfo info;
  bool has_info = false;
  std::vector<ModuleRecord> modules;
  std::vector<LaunchRecord> launches;
  std::vector<SnapshotRecord> snapshots;
  std::vector<StreamOpRecord> stream_ops;  // sorted by seq
  std::vector<GraphLaunchRecord> graphs;   // sorted by index
  // Blob contents by hash, as read so far.
  struct Blob {
    std::vector<uint8_t> data;
    uint64_t total = 0;  // declared size
    bool complete() const { return data.size() == total; }
  };
  std::map<uint64_t, Blob> blobs;

  const ModuleRecord* FindModule(uint64_t hash) const;
  const GraphLaunchRecord* FindGraph(uint64_t index) const;
  // The complete blob of `hash`, or NotFound / DataLoss naming `what`.
  StatusOr<std::span<const uint8_t>> BlobData(uint64_t hash, const std::string& what) const;
};

// Appends replay payload chunks to an SBT writer. Blobs are deduplicated by
// content hash within one writer.
class ReplayPayloadWriter {
 public:
  explicit ReplayPayloadWriter(format::SbtWriter* writer) : writer_(writer) {}

  Status WriteCaptureInfo(const CaptureInfo& info);
  // Stores the image once per content; returns its hash (the module id).
  StatusOr<uint64_t> AddModule(std::span<const uint8_t> image, ImageKind kind,
                               const std::string& name);
  Status AddLaunch(const LaunchRecord& launch);
  // Stores `bytes` (deduplicated) as the before/after image of [address, +size).
  Status AddSnapshot(uint64_t launch_index, SnapshotPhase phase, uint64_t address,
                     std::span<const uint8_t> bytes, const SnapshotOrigin& origin = {});
  // A stream op; for kCopyHtoD `data` (the copied bytes) is stored as a blob
  // and op.data_hash set from it.
  Status AddStreamOp(StreamOpRecord op, std::span<const uint8_t> data = {});
  Status AddGraphLaunch(const GraphLaunchRecord& graph);

  uint64_t blob_bytes_written() const { return blob_bytes_; }
  uint64_t blobs_deduplicated() const { return deduplicated_; }

 private:
  StatusOr<uint64_t> AddBlob(std::span<const uint8_t> bytes);
  format::SbtWriter* writer_;
  std::map<uint64_t, uint64_t> written_;  // hash -> size
  uint64_t blob_bytes_ = 0, deduplicated_ = 0;
};

// Parses one payload chunk (type, decompressed bytes) into `out`. `offset`
// is the chunk's file offset, used in error messages.
Status ParsePayloadChunk(uint16_t type, std::span<const uint8_t> payload, uint64_t offset,
                         ReplayCapture* out);

// Reads every payload chunk of an open SBT file. Damaged or truncated files
// yield what was readable; missing pieces show up in ReplayCapture::BlobData
// and Validate().
StatusOr<ReplayCapture> ReadReplayCapture(format::SbtReader& reader);

// Cross-checks a read capture: every launch's module and snapshots exist and
// are complete, snapshots of a launch do not overlap. Messages name the
// launch and what is missing.
Status ValidateCapture(const ReplayCapture& capture);

}  // namespace tracesmith::format
