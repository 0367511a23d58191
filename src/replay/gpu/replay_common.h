// Pieces shared by single-launch replay (gpu_replayer.cc), graph replay
// (graph_replayer.cc) and range replay (sequence_replayer.cc). Internal to the replay GPU library.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/cuda/call.h"
#include "tracesmith/format/replay_payload.h"
#include "tracesmith/replay/address_ranges.h"
#include "tracesmith/replay/compare.h"
#include "tracesmith/replay/gpu_replayer.h"
#include "tracesmith/replay/relocation.h"
#include "vmm.h"

namespace tracesmith::replay::gpu {

// Loaded modules by content hash, unloaded on destruction.
class ModuleCache {
 public:
  ModuleCache() = default;
  ~ModuleCache() {
    for (auto& [hash, m] : modules_) cuModuleUnload(m);
  }
  ModuleCache(const ModuleCache&) = delete;
  ModuleCache& operator=(const ModuleCache&) = delete;
  ModuleCache(ModuleCache&&) = delete;
  ModuleCache& operator=(ModuleCache&&) = delete;

  StatusOr<CUmodule> Get(const format::ReplayCapture& cap, uint64_t hash) {
    auto it = modules_.find(hash);
    if (it != modules_.end()) return it->second;
    const format::ModuleRecord* rec = cap.FindModule(hash);
    if (!rec)
      return NotFound(StrFormat("module 0x%016llx is missing from the capture",
                                static_cast<unsigned long long>(hash)));
    ASSIGN_OR_RETURN(auto image, cap.BlobData(hash, "module " + rec->name));
    std::vector<uint8_t> copy(image.begin(), image.end());
    if (rec->kind == format::ImageKind::kPtx) copy.push_back(0);  // PTX is a C string
    CUmodule m = nullptr;
    CU_CALL(cuModuleLoadData(&m, copy.data()));
    modules_[hash] = m;
    return m;
  }

 private:
  std::map<uint64_t, CUmodule> modules_;
};

class StreamAndEvents {
 public:
  StreamAndEvents() = default;
  ~StreamAndEvents() {
    if (gate_host_) cuMemFreeHost(gate_host_);
    if (start_) cuEventDestroy(start_);
    if (stop_) cuEventDestroy(stop_);
    if (stream_) cuStreamDestroy(stream_);
  }
  StreamAndEvents(const StreamAndEvents&) = delete;
  StreamAndEvents& operator=(const StreamAndEvents&) = delete;
  StreamAndEvents(StreamAndEvents&&) = delete;
  StreamAndEvents& operator=(StreamAndEvents&&) = delete;
  Status Create() {
    CU_CALL(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
    CU_CALL(cuEventCreate(&start_, CU_EVENT_DEFAULT));
    CU_CALL(cuEventCreate(&stop_, CU_EVENT_DEFAULT));
    // The gate: a host-mapped word the stream waits on before the start
    // event, so the timed span holds the kernel and not the host's launch
    // latency (without it a 1 us kernel measures ~10 us).
    if (cuMemHostAlloc(&gate_host_, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) ==
            CUDA_SUCCESS &&
        cuMemHostGetDevicePointer(&gate_device_, gate_host_, 0) != CUDA_SUCCESS)
      gate_device_ = 0;
    return OkStatus();
  }
  // Before the timed work: the stream stops until Open().
  Status Close() {
    if (!gate_device_) return OkStatus();
    __atomic_store_n(static_cast<uint32_t*>(gate_host_), 0u, __ATOMIC_SEQ_CST);
    if (cuStreamWaitValue32(stream_, gate_device_, 1, CU_STREAM_WAIT_VALUE_EQ) != CUDA_SUCCESS)
      gate_device_ = 0;  // not supported here: time without the gate
    return OkStatus();
  }
  void Open() {
    if (gate_device_) __atomic_store_n(static_cast<uint32_t*>(gate_host_), 1u, __ATOMIC_SEQ_CST);
  }
  bool gated() const { return gate_device_ != 0; }
  CUstream stream() const { return stream_; }
  CUevent start() const { return start_; }
  CUevent stop() const { return stop_; }

 private:
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr, stop_ = nullptr;
  void* gate_host_ = nullptr;
  CUdeviceptr gate_device_ = 0;
};

// Empties the L2 before each cold timed run, as nvbench and Nsight
// Compute's `--cache-control all` do: a memset of a device buffer twice the
// L2's size (the L2 is split in two partitions and its replacement is not
// strict LRU: writing its size once can leave lines of the inputs), queued
// on the stream ahead of the timed span. Allocated after the captured ranges
// are mapped, so it never takes a captured address.
class L2Flusher {
 public:
  L2Flusher() = default;
  ~L2Flusher() {
    if (buffer_) cuMemFree(buffer_);
  }
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  L2Flusher(L2Flusher&&) = delete;
  L2Flusher& operator=(L2Flusher&&) = delete;
  // Without the memory (the captured ranges may fill the device) flushing
  // is off: active() is false and the report says "L2 not flushed".
  Status Create(CUdevice device) {
    int l2 = 0;
    CU_CALL(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device));
    if (l2 <= 0) return OkStatus();
    const size_t bytes = 2 * size_t(l2);
    if (cuMemAlloc(&buffer_, bytes) != CUDA_SUCCESS) {
      buffer_ = 0;
      return OkStatus();
    }
    bytes_ = bytes;
    return OkStatus();
  }
  Status Enqueue(CUstream stream) {
    if (buffer_) CU_CALL(cuMemsetD32Async(buffer_, 0, bytes_ / 4, stream));
    return OkStatus();
  }
  bool active() const { return buffer_ != 0; }

 private:
  CUdeviceptr buffer_ = 0;
  size_t bytes_ = 0;
};

// Calls o.progress, when set, with `runs_done` timed runs of the launch in
// `p` finished.
inline void ReportRuns(const GpuReplayOptions& o, ReplayProgress* p, uint32_t runs_done) {
  if (!o.progress) return;
  p->replays_done = runs_done;
  o.progress(*p);
}

// Device memory for the captured ranges, mapped once per replay (before
// any module load allocates, and kept for every launch: the driver reuses
// freed VA for its own allocations).
struct ReplayMemory {
  std::vector<std::unique_ptr<DeviceReservation>> reservations;
  Relocation relocation;  // ranges mapped away from their captured address
};

// A snapshot image as replay uses it: the captured bytes, or a copy with the
// pointers into moved ranges rewritten when anything was relocated.
// Movable, not copyable: `bytes` may point into `rewritten`'s heap buffer.
struct Image {
  Image() = default;
  Image(Image&&) = default;
  Image& operator=(Image&&) = default;
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;
  std::span<const uint8_t> bytes;
  std::vector<uint8_t> rewritten;  // owns `bytes` when relocated
};

// A captured launch's parameters as cuLaunchKernelEx and kernel graph
// nodes take them: copied into 8-byte aligned storage, one pointer per
// argument at its captured offset; without a per-argument layout, the whole
// buffer through `extra`. Points into itself: neither copied nor moved.
class KernelParams {
 public:
  explicit KernelParams(const format::LaunchRecord& l);
  KernelParams(const KernelParams&) = delete;
  KernelParams& operator=(const KernelParams&) = delete;
  void** kernel_params() { return by_buffer_ ? nullptr : args_.data(); }
  void** extra() { return by_buffer_ ? extra_ : nullptr; }

 private:
  std::vector<uint64_t> storage_;
  std::vector<void*> args_;
  size_t buffer_size_;
  void* extra_[5];
  bool by_buffer_;
};
// The launch attributes to pass: the cluster shape, then the program's
// others as recorded.
std::vector<CUlaunchAttribute> LaunchAttributes(const format::LaunchRecord& l);
Status Launch(const format::LaunchRecord& l, CUfunction f, CUstream stream);
// Maps every range: at its own address when the driver gives it, else
// elsewhere, recorded in `mem->relocation` (relocation.h). Ranges are
// reserved in kDriverVaChunk-aligned spans (vmm.h says why); when the
// driver will not place a span, each range in it is tried alone.
Status MapRanges(const std::vector<AddressRange>& ranges, CUdevice device, uint64_t granularity,
                 const GpuReplayOptions& o, ReplayMemory* mem);
// For the report: how many of a launch's (or sequence's) ranges were
// mapped away.
void CountRanges(const std::vector<AddressRange>& ranges, uint64_t granularity,
                 const ReplayMemory& mem, LaunchOutcome* out);
StatusOr<CUfunction> LoadFunction(const format::ReplayCapture& cap, const format::LaunchRecord& l,
                                  ModuleCache& modules);
// A snapshot image with pointers rewritten when anything was relocated;
// `words` (may be null) counts the rewritten words.
StatusOr<Image> ImageOf(const format::ReplayCapture& cap, const format::SnapshotRecord& s,
                        const Relocation& relocation, const char* what, uint64_t* words);
// A launch's (or graph launch's) snapshots, by phase, in capture order.
struct Snapshots {
  std::vector<const format::SnapshotRecord*> before, after;
};
Snapshots SnapshotsOf(const format::ReplayCapture& cap, uint64_t launch_index);
// The device ranges the snapshots cover.
std::vector<AddressRange> RangesOf(const std::vector<const format::SnapshotRecord*>& snapshots);
// Writes every "before" image back at its (translated) address, pointers
// rewritten when relocated; `words` (may be null) counts the rewritten words.
Status RestoreImages(const format::ReplayCapture& cap,
                     const std::vector<const format::SnapshotRecord*>& before,
                     const Relocation& relocation, uint64_t* words);
// Copies the range an "after" snapshot covers back to the host.
Status DownloadRange(const format::SnapshotRecord& after, const Relocation& relocation,
                     std::vector<uint8_t>* host);

class KernelTimer;

// Graph launches (graph_replayer.cc): the whole graph rebuilt and launched
// as one unit, or with o.node >= 0 that kernel node alone on the inputs its
// ancestors rebuild (then the other nodes, and the final memory compared).
Status ReplayGraphLaunch(const format::ReplayCapture& cap, const format::GraphLaunchRecord& g,
                         uint64_t granularity, const ReplayMemory& mem, ModuleCache& modules,
                         KernelTimer& timer, L2Flusher& flusher, const GpuReplayOptions& o,
                         ReplayProgress* progress, LaunchOutcome* out);
// The outcome's graph fields and `function` ("graph launch (9 nodes: ...)",
// or "graph launch 17, node 3 of 9 (kernel ...): inputs rebuilt by running
// 2 preceding node(s)").
void DescribeGraph(const format::GraphLaunchRecord& g, int64_t node, LaunchOutcome* out);
// A launch record with the graph's index and memory fields, for
// DescribeLaunchMemory.
format::LaunchRecord GraphMemoryStub(const format::GraphLaunchRecord& g);

// Range replay (sequence_replayer.cc): launches first..last and the
// program's stream work between them.
// Each repetition starts from a flushed L2 (`flusher`) and reports to
// `progress` when done.
Status ReplaySequence(const format::ReplayCapture& cap, uint64_t first, uint64_t last,
                      uint64_t granularity, const ReplayMemory& mem, ModuleCache& modules,
                      L2Flusher& flusher, const GpuReplayOptions& o, ReplayProgress* progress,
                      LaunchOutcome* out);
// The device ranges the stream ops between launches first and last touch.
std::vector<AddressRange> StreamOpRanges(const format::ReplayCapture& cap, uint64_t first,
                                         uint64_t last);

}  // namespace tracesmith::replay::gpu
