// Perfetto protobuf exporter: maps TraceSmith events onto tracks and slices
// (the packet layer is perfetto_tracks.cc). Track hierarchy:
//   process (ProcessDescriptor)
//     thread tracks (ThreadDescriptor): CUDA API calls, NVTX ranges/markers, the
//       program's own ranges and instants (tracesmith.range / instant), with their arguments
//     "GPU <n>: <name>"
//       "Stream <s>": kernels (with their function's GPU instruction samples,
//         kernel_samples.h), copies, memsets, syncs, graph launches
//       "Allocations": one slice per allocation, alloc to free (lanes, below)
//       counters: memory in use per memory space and per owner (the live-memory
//       model, memory/memory_model.h), utilization %, captured counters
//     "Counter: <name>": the program's own counters (tracesmith.counter)
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <unordered_map>

#include "kernel_samples.h"
#include "perfetto_groups.h"
#include "perfetto_launch_configs.h"
#include "perfetto_tracks.h"
#include "sinks.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/memory/memory_model.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::exporter {
namespace {

using namespace model;

// What each counter of a memory key shows.
enum class MemoryCounter : uint32_t { kLive = 0, kMapped = 1, kReserved = 2, kImported = 3 };
uint32_t MemoryCounterId(analysis::MemorySpace space, MemoryCounter what, uint32_t owner_plus_1) {
  return static_cast<uint32_t>(space) | (static_cast<uint32_t>(what) << 4) | (owner_plus_1 << 8);
}
// "Device", "Pinned host": the space's name as a title.
std::string SpaceTitle(analysis::MemorySpace space) {
  std::string s = analysis::MemorySpaceName(space);
  s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

class PerfettoSink : public EventSink {
 public:
  explicit PerfettoSink(OutputFile* out) : out_(out), w_(out) {}

  Status Begin(const ExportContext& ctx) override {
    ctx_ = &ctx;
    meta_ = ctx.meta;
    w_.SetTraceStrings(&meta_->strings);
    w_.SetBaseTime(ctx.min_ts);
    for (const auto& p : meta_->Rows<Process>()) process_names_[p.pid] = p.name_id;
    for (const auto& t : meta_->Rows<Thread>()) thread_names_[Key2(t.pid, t.tid)] = t.name_id;
    for (const auto& d : meta_->Rows<Device>()) device_names_[Key2(d.pid, d.device_id)] = d.name_id;
    for (size_t i = 0; i < meta_->Rows<Mapping>().size(); ++i)
      mapping_rows_[meta_->Rows<Mapping>()[i].mapping_id] = i;
    n_launch_ = w_.LocalName("launch");
    n_correlation_ = w_.LocalName("correlation");
    n_bytes_ = w_.LocalName("bytes");
    n_bandwidth_ = w_.LocalName("bandwidth (GB/s)");
    n_value_ = w_.LocalName("value");
    n_return_ = w_.LocalName("return code");
    n_external_ = w_.LocalName("external id");
    n_domain_ = w_.LocalName("domain");
    n_category_ = w_.LocalName("category");
    n_graph_ = w_.LocalName("graph id");
    n_count_ = w_.LocalName("count");
    n_reason_ = w_.LocalName("reason");
    n_cubin_ = w_.LocalName("cubin bytes");
    n_kind_ = w_.LocalName("kind");
    n_graph_launch_ = w_.LocalName("Graph launch");
    n_overhead_ = w_.LocalName("TraceSmith overhead");
    n_dropped_ = w_.LocalName("Dropped records");
    n_module_load_ = w_.LocalName("Module load");
    n_module_unload_ = w_.LocalName("Module unload");
    n_address_ = w_.LocalName("address");
    n_owner_ = w_.LocalName("owner");
    n_memory_ = w_.LocalName("memory");
    n_args_ = w_.LocalName("args");
    owners_.emplace(*meta_);
    if (!ctx.pc_samples.empty()) {
      samples_.emplace(ctx.pc_samples, *meta_);
      n_pc_samples_ = w_.LocalName("pc samples (all launches)");
      n_pc_stall_ = w_.LocalName("top stall (all launches)");
      n_pc_line_ = w_.LocalName("hottest line (all launches)");
    }
    return OkStatus();
  }

  void On(const KernelEvent& k) override {
    uint64_t before = w_.bytes_encoded();
    uint64_t s = k.start_ns, e = std::max(k.end_ns, k.start_ns);
    TrackLane* lane = w_.LaneFor(StreamGroup(k.pid, k.device_id, k.stream_id), s, e);
    const uint32_t name = k.demangled_id ? k.demangled_id : k.name_id;
    w_.BeginEvent(lane, s, pf::kTypeSliceBegin, name);
    LaunchConfig c{{k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.cluster_x,
                    k.cluster_y, k.cluster_z, k.registers_per_thread, k.static_shared_bytes,
                    k.dynamic_shared_bytes}};
    uint32_t config = configs_.IdFor(name, c);
    w_.AnnotateInternedString(n_launch_, config, [&] { return LaunchText(c); });
    if (samples_) SampleSummary(k.pid, k.name_id);
    FlowIn(k.pid, k.correlation_id);
    w_.EndEvent();
    lane->open.push_back(e);
    Utilization(k.pid, k.device_id, s, e);
    ++kernels_;
    kernel_bytes_ += w_.bytes_encoded() - before;
    w_.MaybeFlush();
  }

  void On(const MemcpyEvent& m) override {
    uint32_t name = copy_names_[m.copy_kind & 15];
    if (name == 0) name = copy_names_[m.copy_kind & 15] = w_.LocalName(EventName(*meta_, m));
    GpuSlice(m.pid, m.device_id, m.stream_id, m.start_ns, m.end_ns, name, [&] {
      w_.AnnotateUint(n_bytes_, m.bytes);
      w_.AnnotateDouble(n_bandwidth_, BandwidthGBps(m.bytes, m.start_ns, m.end_ns));
      w_.AnnotateUint(n_correlation_, m.correlation_id);
      FlowIn(m.pid, m.correlation_id);
    });
  }
  void On(const MemsetEvent& m) override {
    uint32_t name = memset_names_[m.memory_kind & 15];
    if (name == 0) name = memset_names_[m.memory_kind & 15] = w_.LocalName(EventName(*meta_, m));
    GpuSlice(m.pid, m.device_id, m.stream_id, m.start_ns, m.end_ns, name, [&] {
      w_.AnnotateUint(n_bytes_, m.bytes);
      w_.AnnotateDouble(n_bandwidth_, BandwidthGBps(m.bytes, m.start_ns, m.end_ns));
      w_.AnnotateUint(n_value_, m.value);
      w_.AnnotateUint(n_correlation_, m.correlation_id);
      FlowIn(m.pid, m.correlation_id);
    });
  }
  // Synchronization waits span the stream's work, so they get a track of
  // their own beside the stream instead of breaking its nesting.
  void On(const SyncEvent& e) override {
    TrackGroup* g =
        Group({GroupKind::kStreamSync, e.pid, e.device_id, e.stream_id}, [&](TrackGroup* g) {
          g->parent_uuid = DeviceUuid(e.pid, e.device_id);
          g->name = e.stream_id == UINT32_MAX ? std::string("Context sync")
                                              : "Stream " + std::to_string(e.stream_id) + " sync";
          uint64_t uuid = w_.NewUuid();
          w_.DescribeTrack(uuid, g->parent_uuid, g->name);
          g->lanes.push_back(w_.NewLane(uuid));
        });
    HostSlice(g, e.start_ns, e.end_ns, w_.LocalName(EventName(*meta_, e)),
              [&] { w_.AnnotateUint(n_correlation_, e.correlation_id); });
  }
  void On(const GraphLaunchEvent& e) override {
    GpuSlice(e.pid, e.device_id, e.stream_id, e.start_ns, e.end_ns, n_graph_launch_, [&] {
      w_.AnnotateUint(n_graph_, e.graph_id);
      w_.AnnotateUint(n_correlation_, e.correlation_id);
      FlowIn(e.pid, e.correlation_id);
    });
  }

  void On(const ApiEvent& a) override {
    HostSlice(ThreadGroup(a.pid, a.tid), a.start_ns, a.end_ns, a.name_id, [&] {
      w_.AnnotateUint(n_correlation_, a.correlation_id);
      if (a.return_code != 0) w_.AnnotateInt(n_return_, a.return_code);
      if (a.external_id != 0) w_.AnnotateUint(n_external_, a.external_id);
      if (a.stack_id != 0) Callstack(a.stack_id);
      uint64_t flow_id;
      if (flows_tracker_.StartFromApi(*ctx_, a.pid, a.correlation_id, &flow_id)) {
        w_.enc().Varint<pf::kTeFlowIdsOld>(flow_id);
        ++flows_;
      }
    });
  }
  void On(const NvtxRangeEvent& r) override {
    HostSlice(ThreadGroup(r.pid, r.tid), r.start_ns, r.end_ns, r.name_id, [&] {
      if (r.domain_id != 0)
        w_.AnnotateInternedString(n_domain_, (1ull << 40) | r.domain_id,
                                  [&] { return std::string(meta_->strings.Get(r.domain_id)); });
      if (r.category != 0) w_.AnnotateUint(n_category_, r.category);
    });
  }
  // A library's NVTX payload (NCCL's communicator, size, group): an instant named by its text.
  void On(const NvtxPayloadEvent& p) override {
    HostInstant(ThreadGroup(p.pid, p.tid), p.ts_ns, p.text_id, [] {});
  }
  void On(const NvtxMarkerEvent& m) override {
    HostInstant(ThreadGroup(m.pid, m.tid), m.ts_ns, m.name_id, [] {});
  }
  void On(const OverheadEvent& o) override {
    TrackGroup* g = o.tid != 0 ? ThreadGroup(o.pid, o.tid) : MiscGroup(o.pid, "TraceSmith");
    HostSlice(g, o.start_ns, o.end_ns, n_overhead_,
              [&] { w_.AnnotateUint(n_kind_, o.overhead_kind); });
  }
  void On(const DropEvent& d) override {
    TrackLane* lane = w_.InstantLaneFor(MiscGroup(d.pid, "TraceSmith"), d.ts_ns);
    w_.BeginEvent(lane, d.ts_ns, pf::kTypeInstant, n_dropped_);
    w_.AnnotateUint(n_count_, d.count);
    w_.AnnotateUint(n_reason_, d.reason);
    w_.EndEvent();
  }
  void On(const ModuleLoadEvent& m) override {
    TrackGroup* g = Group({GroupKind::kDeviceModules, m.pid, m.device_id, 0}, [&](TrackGroup* g) {
      uint64_t uuid = w_.NewUuid();
      g->parent_uuid = DeviceUuid(m.pid, m.device_id);
      g->name = "Modules";
      w_.DescribeTrack(uuid, g->parent_uuid, g->name);
      g->lanes.push_back(w_.NewLane(uuid));
    });
    TrackLane* lane = w_.InstantLaneFor(g, m.ts_ns);
    w_.BeginEvent(lane, m.ts_ns, pf::kTypeInstant,
                  m.op == kModuleUnloaded ? n_module_unload_ : n_module_load_);
    w_.AnnotateUint(n_kind_, m.module_id);
    w_.AnnotateUint(n_cubin_, m.cubin_bytes);
    w_.EndEvent();
  }

  // Memory through the live-memory model (analysis::LiveMemory): the same
  // numbers as `tracesmith memory`. A free's size is its allocation's; a free
  // of memory allocated before the capture changes nothing; an allocation at
  // a live address ends the earlier one (its free was lost).
  void On(const MemoryEvent& m) override {
    const analysis::MemoryChange c = live_.Apply(m);
    const bool vmm = m.op == kMemoryVmmCreate || m.op == kMemoryVmmRelease;
    const SlotKey slot_key{m.pid, vmm, m.address};
    switch (c.kind) {
      case analysis::MemoryChange::kAlloc: {
        auto [it, fresh] = slots_.try_emplace(slot_key);
        if (!fresh) {  // replaced: the earlier allocation's free was lost
          const LiveSlot old = it->second;
          EndAllocation(old, c.ts_ns);
          if (old.key != c.key)
            LiveCounter(old.key, c.ts_ns, live_.totals().at(old.key).live_bytes);
        }
        const uint32_t owner = owners_->Of(c.alloc);
        LiveCounter(c.key, c.ts_ns, c.live_bytes);
        uint64_t& owned = owner_bytes_[{c.key, owner}];
        owned += c.alloc.bytes;
        OwnerCounter(c.key, owner, c.ts_ns, owned);
        it->second = BeginAllocation(c, owner, m.op);
        break;
      }
      case analysis::MemoryChange::kFree: {
        LiveCounter(c.key, c.ts_ns, c.live_bytes);
        auto it = slots_.find(slot_key);
        if (it == slots_.end()) break;  // not reached: the model matched it
        const LiveSlot slot = it->second;
        slots_.erase(it);
        EndAllocation(slot, c.ts_ns);
        break;
      }
      case analysis::MemoryChange::kMap:
      case analysis::MemoryChange::kUnmap:
        SideCounter(c, MemoryCounter::kMapped, " memory mapped (VMM)",
                    live_.totals().at(c.key).mapped_bytes);
        break;
      case analysis::MemoryChange::kReserve:
      case analysis::MemoryChange::kUnreserve:
        SideCounter(c, MemoryCounter::kReserved, " address space reserved (VMM)",
                    live_.totals().at(c.key).reserved_bytes);
        break;
      case analysis::MemoryChange::kImport:
      case analysis::MemoryChange::kUnimport:
        SideCounter(c, MemoryCounter::kImported, " memory imported (IPC)",
                    live_.totals().at(c.key).imported_bytes);
        break;
      default:  // kNone, kUnmatchedFree: nothing changed
        break;
    }
  }
  void On(const CounterEvent& c) override {
    TrackGroup* g = CounterGroup(c.pid, c.device_id, 0x10000 + c.name_id,
                                 std::string(meta_->strings.Get(c.name_id)), false);
    Counter(g, c.ts_ns, [&] { w_.enc().Double(pf::kTeDoubleCounterValue, c.value); });
  }

  // GPU metrics (profile --gpu-metrics): a counter track per metric per GPU,
  // under the device's track, a value per sample from its start; tracks in %
  // share one y-axis.
  void On(const GpuMetricSample& m) override {
    TrackGroup* g =
        Group({GroupKind::kGpuMetric, m.pid, m.device_id, m.metric_id}, [&](TrackGroup* t) {
          const model::GpuMetric* d = model::FindGpuMetric(*meta_, m.pid, m.metric_id);
          std::string unit = d ? std::string(meta_->strings.Get(d->unit_id)) : "";
          t->parent_uuid = DeviceUuid(m.pid, m.device_id);
          t->name = "GPU metric: " + model::EventName(*meta_, m);
          const uint64_t uuid = w_.NewUuid();
          w_.DescribeCounter(uuid, t->parent_uuid, t->name, false, unit,
                             unit == "%" ? "gpu_metrics_percent" : "");
          t->lanes.push_back(w_.NewLane(uuid));
        });
    Counter(g, m.start_ns, [&] { w_.enc().Double(pf::kTeDoubleCounterValue, m.value); });
  }

  // The program's own events (tracesmith.counter / range / instant, app.h).
  void On(const AppCounterEvent& c) override {
    TrackGroup* g = Group({GroupKind::kAppCounter, c.pid, c.name_id, 0}, [&](TrackGroup* t) {
      t->parent_uuid = ProcessUuid(c.pid);
      t->name = "Counter: " + std::string(meta_->strings.Get(c.name_id));
      const uint64_t uuid = w_.NewUuid();
      w_.DescribeCounter(uuid, t->parent_uuid, t->name, false);
      t->lanes.push_back(w_.NewLane(uuid));
    });
    Counter(g, c.ts_ns, [&] { w_.enc().Double(pf::kTeDoubleCounterValue, c.value); });
  }
  void On(const AppEvent& e) override {
    auto args = [&] {
      if (e.args_id != 0)
        w_.AnnotateInternedString(n_args_, (4ull << 40) | e.args_id,
                                  [&] { return std::string(meta_->strings.Get(e.args_id)); });
    };
    if (e.kind == kAppInstant)
      return HostInstant(ThreadGroup(e.pid, e.tid), e.start_ns, e.name_id, args);
    HostSlice(ThreadGroup(e.pid, e.tid), e.start_ns, e.end_ns, e.name_id, args);
  }

  Status Finish(ExportStats* stats) override {
    for (auto& [key, u] : util_) FinishUtilization(key, &u);
    // Allocations still live end at the trace's end.
    for (auto& [key, t] : allocation_tracks_)
      for (size_t i = 0; i < t.lanes.size(); ++i)
        if (t.busy[i]) SliceEnd(t.lanes[i], ctx_->max_ts);
    for (auto& [key, g] : groups_)
      for (TrackLane* lane : g.lanes) w_.CloseAll(lane);
    w_.Flush();
    stats->kernel_events = kernels_;
    stats->kernel_bytes = kernel_bytes_;
    stats->flows = flows_;
    stats->extra_lanes = w_.extra_lanes();
    stats->clamped_samples = clamped_;
    stats->allocation_lanes = allocation_lanes_;
    stats->allocations_not_drawn = allocations_not_drawn_;
    return OkStatus();
  }

 private:
  // A live allocation (or VMM physical allocation, keyed by its handle):
  // where its slice is and what its counters hold.
  struct SlotKey {
    uint32_t pid;
    bool vmm;
    uint64_t address;
    bool operator==(const SlotKey&) const = default;
  };
  struct SlotKeyHash {
    size_t operator()(const SlotKey& k) const {
      return HashMix(HashMix(k.address, k.pid), k.vmm ? 1 : 0);
    }
  };
  struct LiveSlot {
    analysis::MemoryKey key;
    uint32_t owner = 0;
    uint64_t bytes = 0;
    AllocationTrack* track = nullptr;  // nullptr: not drawn
    uint32_t lane = 0;
  };
  struct UtilState {
    uint64_t us = 0, ue = 0;  // current union of busy intervals
    bool have = false;
    uint64_t bucket = UINT64_MAX, busy = 0;
    double last = -1;
  };
  static uint64_t Key2(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }

  // Groups by key. Lookups go through an exact open-addressing index (events
  // alternate between a few groups: the launching thread and the streams;
  // a direct-mapped cache missed whenever two of them shared a slot). The
  // node map owns the groups and fixes the order Finish closes them in.
  template <typename Init>
  TrackGroup* Group(const GroupKey& key, Init&& init) {
    const size_t h = GroupKeyHash{}(key);
    if (TrackGroup* g = group_index_.Find(key, h)) [[likely]]
      return g;
    auto [it, inserted] = groups_.try_emplace(key);
    if (inserted) init(&it->second);
    group_index_.Insert(key, h, &it->second);
    return &it->second;
  }

  uint64_t ProcessUuid(uint32_t pid) {
    auto [it, inserted] = process_uuids_.try_emplace(pid, 0);
    if (inserted) {
      it->second = w_.NewUuid();
      auto n = process_names_.find(pid);
      w_.DescribeProcess(it->second, static_cast<int32_t>(pid),
                         n == process_names_.end() ? "" : meta_->strings.Get(n->second));
    }
    return it->second;
  }
  uint64_t DeviceUuid(uint32_t pid, uint32_t device) {
    auto [it, inserted] = device_uuids_.try_emplace(Key2(pid, device), 0);
    if (inserted) {
      uint64_t parent = ProcessUuid(pid);
      it->second = w_.NewUuid();
      auto n = device_names_.find(Key2(pid, device));
      std::string name = "GPU " + std::to_string(device);
      if (n != device_names_.end() && n->second != 0)
        name += ": " + std::string(meta_->strings.Get(n->second));
      w_.DescribeTrack(it->second, parent, name);
    }
    return it->second;
  }
  // Kernels alternate between a few streams: a direct-mapped cache by
  // stream in front of the group index (groups never move).
  [[gnu::always_inline]] TrackGroup* StreamGroup(uint32_t pid, uint32_t device, uint32_t stream) {
    StreamSlot& slot = stream_cache_[(stream ^ (device << 2)) % stream_cache_.size()];
    if (slot.group != nullptr && slot.stream == stream && slot.device == device && slot.pid == pid)
        [[likely]]
      return slot.group;
    slot = {pid, device, stream, NewStreamGroup(pid, device, stream)};
    return slot.group;
  }
  [[gnu::noinline]] TrackGroup* NewStreamGroup(uint32_t pid, uint32_t device, uint32_t stream) {
    return Group({GroupKind::kStream, pid, device, stream}, [&](TrackGroup* g) {
      g->parent_uuid = DeviceUuid(pid, device);
      g->name = stream == UINT32_MAX ? std::string("Context") : "Stream " + std::to_string(stream);
      uint64_t uuid = w_.NewUuid();
      w_.DescribeTrack(uuid, g->parent_uuid, g->name);
      g->lanes.push_back(w_.NewLane(uuid));
    });
  }
  // Launch calls mostly come from one thread: the last one is remembered.
  [[gnu::always_inline]] TrackGroup* ThreadGroup(uint32_t pid, uint32_t tid) {
    if (last_thread_group_ != nullptr && last_thread_ == Key2(pid, tid)) [[likely]]
      return last_thread_group_;
    return NewThreadGroup(pid, tid);
  }
  [[gnu::noinline]] TrackGroup* NewThreadGroup(uint32_t pid, uint32_t tid) {
    last_thread_ = Key2(pid, tid);
    return last_thread_group_ = Group({GroupKind::kThread, pid, tid, 0}, [&](TrackGroup* g) {
             g->parent_uuid = ProcessUuid(pid);
             auto n = thread_names_.find(Key2(pid, tid));
             std::string_view name = n == thread_names_.end() ? "" : meta_->strings.Get(n->second);
             g->name = name.empty() ? "Thread " + std::to_string(tid) : std::string(name);
             g->is_thread = true;
             uint64_t uuid = w_.NewUuid();
             w_.DescribeThread(uuid, static_cast<int32_t>(pid), tid, name);
             g->lanes.push_back(w_.NewLane(uuid));
           });
  }
  TrackGroup* MiscGroup(uint32_t pid, const char* name) {
    return Group({GroupKind::kProcessMisc, pid, 0, 0}, [&](TrackGroup* g) {
      g->parent_uuid = ProcessUuid(pid);
      g->name = name;
      uint64_t uuid = w_.NewUuid();
      w_.DescribeTrack(uuid, g->parent_uuid, g->name);
      g->lanes.push_back(w_.NewLane(uuid));
    });
  }
  TrackGroup* CounterGroup(uint32_t pid, uint32_t device, uint32_t which, const std::string& name,
                           bool bytes) {
    return Group({GroupKind::kCounter, pid, device, which}, [&](TrackGroup* g) {
      g->parent_uuid = DeviceUuid(pid, device);
      g->name = name;
      uint64_t uuid = w_.NewUuid();
      w_.DescribeCounter(uuid, g->parent_uuid, name, bytes);
      g->lanes.push_back(w_.NewLane(uuid));
    });
  }

  template <typename Args>
  void HostSlice(TrackGroup* g, uint64_t s, uint64_t e, uint32_t name, Args&& args) {
    e = std::max(e, s);
    TrackLane* lane = w_.LaneFor(g, s, e);
    w_.BeginEvent(lane, s, pf::kTypeSliceBegin, name);
    args();
    w_.EndEvent();
    lane->open.push_back(e);
    w_.MaybeFlush();
  }
  template <typename Args>
  void HostInstant(TrackGroup* g, uint64_t ts, uint32_t name, Args&& args) {
    w_.BeginEvent(w_.InstantLaneFor(g, ts), ts, pf::kTypeInstant, name);
    args();
    w_.EndEvent();
    w_.MaybeFlush();
  }
  template <typename Args>
  void GpuSlice(uint32_t pid, uint32_t device, uint32_t stream, uint64_t s, uint64_t e,
                uint32_t name, Args&& args) {
    HostSlice(StreamGroup(pid, device, stream), s, e, name, std::forward<Args>(args));
  }
  // Counter samples stay on their one track: a late sample is written at the
  // track's last time (and counted) rather than split onto a second track.
  template <typename Value>
  void Counter(TrackGroup* g, uint64_t ts, Value&& value) {
    TrackLane* lane = g->lanes[0];
    if (ts < lane->last_ts) {
      ts = lane->last_ts;
      ++clamped_;
    }
    w_.BeginEvent(lane, ts, pf::kTypeCounter, 0);
    value();
    w_.EndEvent();
    w_.MaybeFlush();
  }

  // Memory counters live under the device track of their process.
  // `name()` is called once, when the track is made.
  template <typename Name>
  void MemoryCounterSample(const analysis::MemoryKey& key, uint32_t id, Name&& name, uint64_t ts,
                           uint64_t bytes) {
    TrackGroup* g =
        Group({GroupKind::kMemoryCounter, key.pid, key.device_id, id}, [&](TrackGroup* g) {
          g->parent_uuid = DeviceUuid(key.pid, key.device_id);
          g->name = name();
          uint64_t uuid = w_.NewUuid();
          w_.DescribeCounter(uuid, g->parent_uuid, g->name, true);
          g->lanes.push_back(w_.NewLane(uuid));
        });
    Counter(g, ts, [&] { w_.enc().Int(pf::kTeCounterValue, static_cast<int64_t>(bytes)); });
  }
  void LiveCounter(const analysis::MemoryKey& key, uint64_t ts, uint64_t bytes) {
    MemoryCounterSample(
        key, MemoryCounterId(key.space, MemoryCounter::kLive, 0),
        [&] { return SpaceTitle(key.space) + " memory in use"; }, ts, bytes);
  }
  void OwnerCounter(const analysis::MemoryKey& key, uint32_t owner, uint64_t ts, uint64_t bytes) {
    MemoryCounterSample(
        key, MemoryCounterId(key.space, MemoryCounter::kLive, owner + 1),
        [&] { return SpaceTitle(key.space) + " memory in use: " + owners_->Name(owner); }, ts,
        bytes);
  }
  void SideCounter(const analysis::MemoryChange& c, MemoryCounter what, const char* suffix,
                   uint64_t bytes) {
    MemoryCounterSample(
        c.key, MemoryCounterId(c.key.space, what, 0),
        [&] { return SpaceTitle(c.key.space) + suffix; }, c.ts_ns, bytes);
  }

  AllocationTrack& AllocationTrackFor(uint32_t pid, uint32_t device) {
    auto [it, fresh] = allocation_tracks_.try_emplace(Key2(pid, device));
    if (fresh) it->second.parent_uuid = DeviceUuid(pid, device);
    return it->second;
  }
  // Opens the allocation's slice on the first free lane of its device.
  LiveSlot BeginAllocation(const analysis::MemoryChange& c, uint32_t owner, uint8_t op) {
    LiveSlot slot{c.key, owner, c.alloc.bytes, nullptr, 0};
    // Static memory (a module's __device__ variables, set up when it loads:
    // thousands of small ones per library) is in the counters, owner
    // "module globals", without a slice each.
    if (c.alloc.memory_kind == kMemDeviceStatic || c.alloc.memory_kind == kMemManagedStatic)
      return slot;
    AllocationTrack& t = AllocationTrackFor(c.key.pid, c.key.device_id);
    if (!t.free.empty()) {
      slot.lane = t.free.top();
      t.free.pop();
    } else if (t.lanes.size() < kMaxAllocationLanes) {
      slot.lane = static_cast<uint32_t>(t.lanes.size());
      uint64_t uuid = w_.NewUuid();
      w_.DescribeTrack(uuid, t.parent_uuid, "Allocations");
      t.lanes.push_back(w_.NewLane(uuid));
      t.busy.push_back(0);
      ++allocation_lanes_;
    } else {
      ++allocations_not_drawn_;
      return slot;
    }
    slot.track = &t;
    t.busy[slot.lane] = 1;
    TrackLane* lane = t.lanes[slot.lane];
    w_.BeginEvent(lane, std::max(c.ts_ns, lane->last_ts), pf::kTypeSliceBegin,
                  AllocationName(op == kMemoryVmmCreate, c.alloc.bytes));
    w_.AnnotateString(n_address_, Hex(c.alloc.address));  // the handle for cuMemCreate
    w_.AnnotateUint(n_bytes_, c.alloc.bytes);
    w_.AnnotateInternedString(n_owner_, (2ull << 40) | owner, [&] { return owners_->Name(owner); });
    w_.AnnotateInternedString(n_memory_, (3ull << 40) | c.alloc.memory_kind,
                              [&] { return std::string(MemoryKindName(c.alloc.memory_kind)); });
    if (c.alloc.correlation_id != 0) w_.AnnotateUint(n_correlation_, c.alloc.correlation_id);
    if (c.alloc.stack_id != 0) Callstack(c.alloc.stack_id);
    w_.EndEvent();
    w_.MaybeFlush();
    return slot;
  }
  // "alloc 2.00 MiB": sizes repeat, so the last names made are remembered.
  uint32_t AllocationName(bool vmm, uint64_t bytes) {
    const uint64_t key = (bytes << 1) | (vmm ? 1 : 0);
    auto& slot = allocation_names_[(key * 0x9e3779b97f4a7c15ull) >> 56];  // 256 slots
    if (slot.second == 0 || slot.first != key)
      slot = {key, w_.LocalName((vmm ? "cuMemCreate " : "alloc ") + HumanBytes(bytes))};
    return slot.second;
  }
  static std::string_view Hex(uint64_t v) {
    static thread_local char buf[19];
    char* p = buf + sizeof buf;
    do {
      *--p = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    *--p = 'x';
    *--p = '0';
    return {p, static_cast<size_t>(buf + sizeof buf - p)};
  }
  // Ends the slice and takes the allocation out of its owner's counter.
  void EndAllocation(const LiveSlot& slot, uint64_t ts) {
    uint64_t& owned = owner_bytes_[{slot.key, slot.owner}];
    owned -= std::min(owned, slot.bytes);
    OwnerCounter(slot.key, slot.owner, ts, owned);
    if (slot.track == nullptr) return;
    SliceEnd(slot.track->lanes[slot.lane], ts);
    slot.track->busy[slot.lane] = 0;
    slot.track->free.push(slot.lane);
  }
  void SliceEnd(TrackLane* lane, uint64_t ts) {
    w_.BeginEvent(lane, std::max(ts, lane->last_ts), pf::kTypeSliceEnd, 0);
    w_.EndEvent();
    w_.MaybeFlush();
  }

  // The GPU instruction samples of a kernel slice's function: all its
  // launches' (kernel_samples.h), the two texts interned once per sequence.
  void SampleSummary(uint32_t pid, uint32_t mangled_id) {
    const KernelSampleSummary* s = samples_->Find(pid, mangled_id);
    if (s == nullptr) return;
    w_.AnnotateUint(n_pc_samples_, samples_->functions()[s->index].samples);
    const uint64_t key = (4ull << 40) | (uint64_t{s->index} << 1);
    if (!s->top_stall.empty())
      w_.AnnotateInternedString(n_pc_stall_, key, [&] { return s->top_stall; });
    if (!s->hottest_line.empty())
      w_.AnnotateInternedString(n_pc_line_, key | 1, [&] { return s->hottest_line; });
  }

  // The first GPU op of a linked correlation terminates the flow its launch
  // call started; later ops sharing the id (graph nodes) get no arrow.
  void FlowIn(uint32_t pid, uint32_t corr) {
    uint64_t flow_id;
    if (flows_tracker_.EndAtGpuOp(*ctx_, pid, corr, &flow_id))
      w_.enc().Varint<pf::kTeTerminatingFlowIdsOld>(flow_id);
  }

  void Callstack(uint32_t stack_id) {
    w_.enc().Varint(pf::kTeCallstackIid, stack_id);
    if (!w_.InternStack(stack_id)) return;
    std::vector<uint32_t> frames = StackFrames(*meta_, stack_id);  // leaf first
    ProtoEncoder& in = w_.interned();
    const auto& frame_rows = meta_->Rows<Frame>();
    for (uint32_t fid : frames) {
      if (fid == 0 || fid > frame_rows.size() || !w_.InternFrame(fid)) continue;
      const Frame& f = frame_rows[fid - 1];
      if (f.function_id != 0 && w_.InternFunction(f.function_id)) {
        size_t n = in.BeginNested(pf::kIdFunctionNames);
        in.Varint(1, f.function_id);
        in.String(2, meta_->strings.Get(f.function_id));
        in.EndNested(n);
      }
      if (f.file_id != 0 && w_.InternFile(f.file_id)) {
        size_t n = in.BeginNested(pf::kIdSourcePaths);
        in.Varint(1, f.file_id);
        in.String(2, meta_->strings.Get(f.file_id));
        in.EndNested(n);
      }
      auto m = mapping_rows_.find(f.mapping_id);
      bool has_mapping = f.mapping_id != 0 && m != mapping_rows_.end();
      if (has_mapping && w_.InternMapping(f.mapping_id)) {
        const Mapping& map = meta_->Rows<Mapping>()[m->second];
        if (map.path_id != 0) {
          size_t n = in.BeginNested(pf::kIdMappingPaths);
          in.Varint(1, map.path_id);
          in.String(2, meta_->strings.Get(map.path_id));
          in.EndNested(n);
        }
        size_t n = in.BeginNested(pf::kIdMappings);
        in.Varint(1, f.mapping_id);
        in.Varint(3, map.file_offset);
        in.Varint(4, map.start);
        in.Varint(5, map.end);
        if (map.path_id != 0) in.Varint(7, map.path_id);
        in.EndNested(n);
      }
      size_t n = in.BeginNested(pf::kIdFrames);
      in.Varint(1, fid);
      if (f.function_id != 0) in.Varint(2, f.function_id);
      if (has_mapping) in.Varint(3, f.mapping_id);
      if (f.rel_pc != 0) in.Varint(4, f.rel_pc);
      if (f.file_id != 0) in.Varint(5, f.file_id);
      if (f.line != 0) in.Varint(6, f.line);
      in.Varint(7, f.kind == kFramePython ? 3 : 1);  // KIND_INTERPRETED : KIND_NATIVE
      in.EndNested(n);
    }
    size_t n = in.BeginNested(pf::kIdCallstacks);
    in.Varint(1, stack_id);
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)  // Perfetto: root first
      if (*it != 0 && *it <= frame_rows.size()) in.Varint(2, *it);
    in.EndNested(n);
  }

  // GPU utilization: % of each window with at least one kernel running.
  void Utilization(uint32_t pid, uint32_t device, uint64_t s, uint64_t e) {
    uint64_t key = Key2(pid, device);
    if (util_cached_ == nullptr || util_cached_key_ != key) {
      util_cached_ = &util_[key];
      util_cached_key_ = key;
    }
    UtilState& u = *util_cached_;
    if (!u.have) {
      u = {s, e, true};
    } else if (s > u.ue) {
      CommitBusy(Key2(pid, device), &u, u.us, u.ue);
      u.us = s;
      u.ue = e;
    } else {
      u.ue = std::max(u.ue, e);
    }
  }
  // Adds the busy interval [a, b) to the windows it covers, in O(1) however
  // long it is: the whole windows inside it are all 100%, and a run of equal
  // values is written once, so the first is written and the last kept open
  // (a corrupt kernel end 9e18 ns away spans 9e12 windows).
  void CommitBusy(uint64_t key, UtilState* u, uint64_t a, uint64_t b) {
    const uint64_t w = ctx_->options.utilization_window_ns, base = ctx_->min_ts;
    a = std::max(a, base);
    while (a < b) {
      uint64_t idx = (a - base) / w;
      if (idx != u->bucket) {
        if (u->bucket != UINT64_MAX) {
          EmitUtil(key, u, u->bucket, u->busy);
          if (idx > u->bucket + 1) EmitUtil(key, u, u->bucket + 1, 0);  // idle gap
        }
        u->bucket = idx;
        u->busy = 0;
      }
      const uint64_t piece = std::min(b - a, w - (a - base) % w);  // to the window's end
      u->busy += piece;
      a += piece;
      const uint64_t whole = (b - a) / w;
      if (whole > 0) {
        EmitUtil(key, u, u->bucket, u->busy);
        EmitUtil(key, u, u->bucket + 1, w);
        u->bucket += whole;
        u->busy = w;
        a += whole * w;
      }
    }
  }
  void EmitUtil(uint64_t key, UtilState* u, uint64_t bucket, uint64_t busy) {
    const uint64_t w = ctx_->options.utilization_window_ns;
    if (bucket > (UINT64_MAX - ctx_->min_ts) / w) return;  // past the end of time
    double value = std::min(100.0, 100.0 * static_cast<double>(busy) / static_cast<double>(w));
    if (value == u->last) return;
    u->last = value;
    uint32_t pid = static_cast<uint32_t>(key >> 32), device = static_cast<uint32_t>(key);
    TrackGroup* g = CounterGroup(pid, device, 1, "GPU utilization %", false);
    Counter(g, ctx_->min_ts + bucket * w,
            [&] { w_.enc().Double(pf::kTeDoubleCounterValue, value); });
  }
  void FinishUtilization(uint64_t key, UtilState* u) {
    if (!u->have) return;
    CommitBusy(key, u, u->us, u->ue);
    if (u->bucket != UINT64_MAX) {
      EmitUtil(key, u, u->bucket, u->busy);
      EmitUtil(key, u, u->bucket + 1, 0);
    }
  }

  OutputFile* out_;
  PerfettoTrackWriter w_;
  const ExportContext* ctx_ = nullptr;
  const model::Trace* meta_ = nullptr;
  std::unordered_map<uint32_t, uint32_t> process_names_;
  std::unordered_map<uint64_t, uint32_t> thread_names_, device_names_;
  std::unordered_map<uint32_t, size_t> mapping_rows_;
  std::unordered_map<uint32_t, uint64_t> process_uuids_;
  std::unordered_map<uint64_t, uint64_t> device_uuids_;
  std::unordered_map<GroupKey, TrackGroup, GroupKeyHash> groups_;
  GroupIndex group_index_;
  struct StreamSlot {
    uint32_t pid = 0, device = 0, stream = 0;
    TrackGroup* group = nullptr;
  };
  std::array<StreamSlot, 16> stream_cache_{};
  uint64_t last_thread_ = 0;
  TrackGroup* last_thread_group_ = nullptr;
  analysis::LiveMemory live_;
  std::optional<analysis::MemoryOwners> owners_;  // needs the metadata: made in Begin
  std::optional<KernelSamples> samples_;          // when the trace has GPU instruction samples
  std::unordered_map<SlotKey, LiveSlot, SlotKeyHash> slots_;
  std::map<std::pair<analysis::MemoryKey, uint32_t>, uint64_t> owner_bytes_;
  std::map<uint64_t, AllocationTrack> allocation_tracks_;  // by (pid, device); nodes stay put
  uint64_t allocation_lanes_ = 0, allocations_not_drawn_ = 0;
  std::array<std::pair<uint64_t, uint32_t>, 256> allocation_names_{};  // (bytes, vmm) -> name
  std::unordered_map<uint64_t, UtilState> util_;
  UtilState* util_cached_ = nullptr;
  uint64_t util_cached_key_ = 0;
  FlowTracker flows_tracker_;
  LaunchConfigIds configs_;
  uint32_t copy_names_[16] = {}, memset_names_[16] = {};
  uint32_t n_launch_, n_correlation_, n_bytes_, n_bandwidth_, n_value_, n_return_, n_external_,
      n_domain_, n_category_, n_graph_, n_count_, n_reason_, n_cubin_, n_kind_, n_graph_launch_,
      n_overhead_, n_dropped_, n_module_load_, n_module_unload_, n_address_, n_owner_, n_memory_,
      n_args_, n_pc_samples_ = 0, n_pc_stall_ = 0, n_pc_line_ = 0;
  uint64_t kernels_ = 0, kernel_bytes_ = 0, flows_ = 0, clamped_ = 0;
};

}  // namespace

std::unique_ptr<EventSink> MakePerfettoSink(OutputFile* out) {
  return std::make_unique<PerfettoSink>(out);
}

}  // namespace tracesmith::exporter
