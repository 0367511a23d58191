// EventSink: what every exporter implements. The driver (export.cc) gives it
// the trace's metadata once (Begin), then every event in start-time order,
// then Finish. Kinds an exporter does not write keep the no-op default.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/export/export.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::exporter {

// Which correlation ids have a launch API call and which a GPU op, per
// process, so that flows are written only when both ends exist (a dropped
// record must not leave a dangling arrow). One bit per id per side.
class CorrelationIndex {
 public:
  // Inline: the export's first pass calls these for every launch and GPU op.
  [[gnu::always_inline]] void AddApi(uint32_t pid, uint32_t corr) { Set(&Mutable(pid)->api, corr); }
  [[gnu::always_inline]] void AddGpu(uint32_t pid, uint32_t corr) { Set(&Mutable(pid)->gpu, corr); }
  bool HasApi(uint32_t pid, uint32_t corr) const { return Test(pid, corr, true); }
  bool HasGpu(uint32_t pid, uint32_t corr) const { return Test(pid, corr, false); }
  // Dense index of a pid (order of first appearance), used to make flow ids
  // unique across processes: id = index << 32 | correlation.
  uint32_t PidIndex(uint32_t pid) const {
    const Bits* b = Find(pid);
    return b == nullptr ? 0 : b->index;
  }
  struct Bits {
    uint32_t index = 0;
    std::vector<uint64_t> api, gpu;
  };
  // A process's bits (nullptr when it has none); stable once built.
  const Bits* ForPid(uint32_t pid) const { return Find(pid); }

 private:
  Bits& Get(uint32_t pid) {
    auto [it, inserted] = per_pid_.try_emplace(pid);
    if (inserted) it->second.index = static_cast<uint32_t>(per_pid_.size() - 1);
    return it->second;
  }
  Bits* Mutable(uint32_t pid) {
    if (cached_ != nullptr && cached_pid_ == pid) [[likely]]
      return const_cast<Bits*>(cached_);
    return MutableSlow(pid);
  }
  [[gnu::noinline]] Bits* MutableSlow(uint32_t pid) {
    Bits* b = &Get(pid);
    cached_pid_ = pid;
    cached_ = b;
    return b;
  }
  // One process per trace is the common case: remember the last lookup.
  const Bits* Find(uint32_t pid) const {
    if (cached_ != nullptr && cached_pid_ == pid) return cached_;
    auto it = per_pid_.find(pid);
    if (it == per_pid_.end()) return nullptr;
    cached_pid_ = pid;
    cached_ = &it->second;
    return cached_;
  }
  static void Set(std::vector<uint64_t>* v, uint32_t id) {
    if (id / 64 >= v->size()) [[unlikely]]
      Grow(v, id);
    (*v)[id / 64] |= 1ull << (id % 64);
  }
  // Doubling: ids mostly grow one at a time.
  [[gnu::noinline]] static void Grow(std::vector<uint64_t>* v, uint32_t id) {
    v->resize(std::max<size_t>(id / 64 + 1, 2 * v->size()));
  }
  bool Test(uint32_t pid, uint32_t id, bool api) const {
    const Bits* b = Find(pid);
    if (b == nullptr) return false;
    const auto& v = api ? b->api : b->gpu;
    return id / 64 < v.size() && ((v[id / 64] >> (id % 64)) & 1);
  }
  std::unordered_map<uint32_t, Bits> per_pid_;  // node-based: cached_ stays valid
  mutable uint32_t cached_pid_ = 0;
  mutable const Bits* cached_ = nullptr;
};

// Everything known before the first event is written.
struct ExportContext {
  const model::Trace* meta = nullptr;  // strings + metadata rows (no event rows needed)
  CorrelationIndex correlations;
  uint64_t min_ts = 0, max_ts = 0;  // over all events; 0/0 when none
  uint64_t event_count = 0;
  ExportOptions options;

  uint64_t FlowId(uint32_t pid, uint32_t corr) const {
    return (uint64_t{correlations.PidIndex(pid)} << 32) | corr;
  }
  // A launch call and its GPU op are linked when both were recorded.
  bool Linked(uint32_t pid, uint32_t corr) const {
    return corr != 0 && correlations.HasApi(pid, corr) && correlations.HasGpu(pid, corr);
  }
};

// Flows in file order: a launch call starts a flow only if its GPU op has
// not been written yet, and a GPU op ends one only if the call already
// started it (and only the first op of a correlation does). With events in
// time order that is every linked pair; when the reorder window overflows,
// a pair written backwards gets no arrow instead of a dangling one.
class FlowTracker {
 public:
  // True when the call starts a flow; its id goes to *flow_id.
  bool StartFromApi(const ExportContext& ctx, uint32_t pid, uint32_t corr, uint64_t* flow_id) {
    PerPid& p = For(ctx, pid);
    if (!p.Linked(corr) || Test(p.gpu_done, corr)) return false;
    Set(&p.api_started, corr);
    *flow_id = (uint64_t{p.index} << 32) | corr;
    return true;
  }
  // True when the GPU op ends a flow; its id goes to *flow_id.
  bool EndAtGpuOp(const ExportContext& ctx, uint32_t pid, uint32_t corr, uint64_t* flow_id) {
    PerPid& p = For(ctx, pid);
    if (!p.Linked(corr)) return false;
    bool first = !Test(p.gpu_done, corr);
    Set(&p.gpu_done, corr);
    *flow_id = (uint64_t{p.index} << 32) | corr;
    return first && Test(p.api_started, corr);
  }

 private:
  // Per process: the context's correlation bits (what exists) and ours
  // (what was written), behind a last-pid cache: one process per trace is
  // the common case, and this runs for every launch and GPU op. Our bit
  // sets are sized once to cover every linked id (an id is linked only
  // when it is below the size of both of the context's sets), so the
  // accesses after Linked() need no bounds check.
  struct PerPid {
    const uint64_t* api = nullptr;  // the context's bits
    const uint64_t* gpu = nullptr;
    uint32_t linked_words = 0;  // ids below 64 * linked_words may be linked
    uint32_t index = 0;
    std::vector<uint64_t> api_started, gpu_done;
    bool Linked(uint32_t corr) const {
      const uint32_t w = corr / 64;
      const uint64_t bit = uint64_t{1} << (corr % 64);
      return corr != 0 && w < linked_words && (api[w] & gpu[w] & bit) != 0;
    }
  };
  PerPid& For(const ExportContext& ctx, uint32_t pid) {
    if (cached_ != nullptr && cached_pid_ == pid) [[likely]]
      return *cached_;
    return Lookup(ctx, pid);
  }
  PerPid& Lookup(const ExportContext& ctx, uint32_t pid) {
    auto [it, inserted] = per_pid_.try_emplace(pid);
    if (inserted) {
      PerPid& p = it->second;
      if (const CorrelationIndex::Bits* b = ctx.correlations.ForPid(pid)) {
        p.api = b->api.data();
        p.gpu = b->gpu.data();
        p.linked_words = static_cast<uint32_t>(std::min(b->api.size(), b->gpu.size()));
      }
      p.index = ctx.correlations.PidIndex(pid);
      p.api_started.resize(p.linked_words);
      p.gpu_done.resize(p.linked_words);
    }
    cached_ = &it->second;
    cached_pid_ = pid;
    return *cached_;
  }
  // Linked ids only: in bounds by construction.
  static void Set(std::vector<uint64_t>* v, uint32_t id) {
    (*v)[id / 64] |= uint64_t{1} << (id % 64);
  }
  static bool Test(const std::vector<uint64_t>& v, uint32_t id) {
    return (v[id / 64] >> (id % 64)) & 1;
  }
  std::unordered_map<uint32_t, PerPid> per_pid_;  // node-based: cached_ stays valid
  uint32_t cached_pid_ = 0;
  PerPid* cached_ = nullptr;
};

// The formatter does not lay this macro out the same way twice.
// clang-format off
#define TS_EXPORT_EVENT_TYPES(M)                                                  \
  M(KernelEvent)                                                                  \
  M(MemcpyEvent)                                                                  \
  M(MemsetEvent)                                                                  \
  M(SyncEvent)                                                                    \
  M(ApiEvent) M(NvtxRangeEvent) M(NvtxMarkerEvent) M(MemoryEvent) M(CounterEvent) \
      M(ModuleLoadEvent) M(GraphLaunchEvent) M(OverheadEvent) M(DropEvent)
// clang-format on

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual Status Begin(const ExportContext& ctx) = 0;
#define TS_SINK_METHOD(T) \
  virtual void On(const model::T&) {}
  TS_EXPORT_EVENT_TYPES(TS_SINK_METHOD)
#undef TS_SINK_METHOD
  // Writes what is left and closes the output; fills the format's stats.
  virtual Status Finish(ExportStats* stats) = 0;
};

}  // namespace tracesmith::exporter
