// EventSink: what every exporter implements. The driver (export.cc) gives it
// the trace's metadata once (Begin), then every event in start-time order,
// then Finish. Kinds an exporter does not write keep the no-op default.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "id_set.h"
#include "tracesmith/base/status.h"
#include "tracesmith/export/export.h"
#include "tracesmith/model/trace.h"
#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::exporter {

// Which correlation ids have a launch API call and which a GPU op, per
// process, so that flows are written only when both ends exist (a dropped
// record must not leave a dangling arrow). One bit per id per side while the
// ids are dense (IdSet).
class CorrelationSides {
 public:
  // Inline: the export's first pass calls these for every launch and GPU op.
  [[gnu::always_inline]] void AddApi(uint32_t pid, uint32_t corr) {
    Mutable(pid)->api.Insert(corr);
  }
  [[gnu::always_inline]] void AddGpu(uint32_t pid, uint32_t corr) {
    Mutable(pid)->gpu.Insert(corr);
  }
  bool HasApi(uint32_t pid, uint32_t corr) const {
    const Bits* b = Find(pid);
    return b != nullptr && b->api.Contains(corr);
  }
  bool HasGpu(uint32_t pid, uint32_t corr) const {
    const Bits* b = Find(pid);
    return b != nullptr && b->gpu.Contains(corr);
  }
  // Dense index of a pid (order of first appearance), used to make flow ids
  // unique across processes: id = index << 32 | correlation.
  uint32_t PidIndex(uint32_t pid) const {
    const Bits* b = Find(pid);
    return b == nullptr ? 0 : b->index;
  }
  struct Bits {
    uint32_t index = 0;
    IdSet api, gpu;
  };
  // A process's ids (nullptr when it has none); stable once built.
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
  std::unordered_map<uint32_t, Bits> per_pid_;  // node-based: cached_ stays valid
  mutable uint32_t cached_pid_ = 0;
  mutable const Bits* cached_ = nullptr;
};

// Everything known before the first event is written.
struct ExportContext {
  const model::Trace* meta = nullptr;  // strings + metadata rows (no event rows needed)
  CorrelationSides correlations;
  uint64_t min_ts = 0, max_ts = 0;  // over all events; 0/0 when none
  uint64_t event_count = 0;
  uint64_t memory_events = 0;  // MemoryEvent rows (JSON: "profile_memory")
  // The largest framework "External id" of a call or range (imported torch
  // traces): the JSON export's own ids start above it.
  uint64_t max_external_id = 0;
  // GPU instruction samples, added up (per instruction and stall reason, not
  // per row), with the kernels' demangled names: the summaries Perfetto puts
  // on kernel slices before their samples' rows come (kernel_samples.h).
  // Kernel names are kept only when `pc_sampled` (the trace has sample rows,
  // known before the first pass: from the file's chunk index).
  analysis::PcSamples pc_samples;
  bool pc_sampled = false;
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
    if (!p.Linked(corr) || p.gpu_done.Contains(corr)) return false;
    p.api_started.Insert(corr);
    *flow_id = (uint64_t{p.index} << 32) | corr;
    return true;
  }
  // True when the GPU op ends a flow; its id goes to *flow_id.
  bool EndAtGpuOp(const ExportContext& ctx, uint32_t pid, uint32_t corr, uint64_t* flow_id) {
    PerPid& p = For(ctx, pid);
    if (!p.Linked(corr)) return false;
    bool first = !p.gpu_done.Contains(corr);
    p.gpu_done.Insert(corr);
    *flow_id = (uint64_t{p.index} << 32) | corr;
    return first && p.api_started.Contains(corr);
  }

 private:
  // Per process: the context's correlation ids (what exists) and ours (what
  // was written), behind a last-pid cache: one process per trace is the
  // common case, and this runs for every launch and GPU op.
  struct PerPid {
    const CorrelationSides::Bits* ids = nullptr;  // the context's
    uint32_t index = 0;
    IdSet api_started, gpu_done;
    bool Linked(uint32_t corr) const {
      return corr != 0 && ids != nullptr && ids->api.Contains(corr) && ids->gpu.Contains(corr);
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
      it->second.ids = ctx.correlations.ForPid(pid);
      it->second.index = ctx.correlations.PidIndex(pid);
    }
    cached_ = &it->second;
    cached_pid_ = pid;
    return *cached_;
  }
  std::unordered_map<uint32_t, PerPid> per_pid_;  // node-based: cached_ stays valid
  uint32_t cached_pid_ = 0;
  PerPid* cached_ = nullptr;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual Status Begin(const ExportContext& ctx) = 0;
  // One overload per event type (model/records.h's TS_RECORD_TABLE).
#define TS_SINK_METHOD(T, ...) \
  virtual void On(const model::T&) {}
  TS_FOR_EACH_EVENT_TYPE(TS_SINK_METHOD)
#undef TS_SINK_METHOD
  // Writes what is left and closes the output; fills the format's stats.
  virtual Status Finish(ExportStats* stats) = 0;
};

}  // namespace tracesmith::exporter
