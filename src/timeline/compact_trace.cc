#include "tracesmith/timeline/compact_trace.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <queue>
#include <set>
#include <thread>
#include <tuple>

#include "tracesmith/timeline/sorter.h"

namespace tracesmith::analysis {

using namespace model;

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kKernel:
      return "kernel";
    case OpKind::kMemcpy:
      return "memcpy";
    case OpKind::kMemset:
      return "memset";
  }
  return "?";
}

// ---- CorrelationIndex ------------------------------------------------------

template <typename ForEach>
void CorrelationIndex::Build(const ForEach& for_each) {
  tables_.clear();
  // Processes are few: one pass per pid, no sort of the (millions of) entries.
  std::vector<uint32_t> pids;
  for_each([&](const Entry& e) {
    if (pids.empty() ||
        (pids.back() != e.pid && std::find(pids.begin(), pids.end(), e.pid) == pids.end()))
      pids.push_back(e.pid);
  });
  for (uint32_t pid : pids) {
    uint32_t lo = UINT32_MAX, hi = 0;
    size_t n = 0;
    for_each([&](const Entry& e) {
      if (e.pid == pid) lo = std::min(lo, e.correlation), hi = std::max(hi, e.correlation), ++n;
    });
    PidTable t;
    t.pid = pid;
    t.base = lo;
    const uint64_t range = uint64_t(hi) - lo + 1;
    // Dense while it costs at most ~4 slots per entry (CUPTI ids are sequential).
    if (range <= 4 * n + 1024) {
      t.dense.assign(range, kNone);
      for_each([&](const Entry& e) {
        if (e.pid != pid) return;
        t.dense[e.correlation - lo] = e.index;  // the later entry wins
      });
    } else {
      t.sparse.reserve(n);
      for_each([&](const Entry& e) {
        if (e.pid == pid) t.sparse.push_back(e);
      });
      std::stable_sort(t.sparse.begin(), t.sparse.end(), [](const Entry& a, const Entry& b) {
        return a.correlation < b.correlation;
      });
      size_t k = 0;  // keep one entry per id, chosen as in the dense table
      for (size_t i = 0; i < t.sparse.size(); ++i) {
        if (k > 0 && t.sparse[k - 1].correlation == t.sparse[i].correlation) {
          t.sparse[k - 1] = t.sparse[i];
        } else {
          t.sparse[k++] = t.sparse[i];
        }
      }
      t.sparse.resize(k);
      t.sparse.shrink_to_fit();
    }
    tables_.push_back(std::move(t));
  }
}

template <typename Size, typename EntryAt>
bool CorrelationIndex::BuildPacked(size_t runs, const Size& size, const EntryAt& entry) {
  tables_.clear();
  struct Span {
    uint32_t pid, lo = UINT32_MAX, hi = 0;
    size_t n = 0;
  };
  std::vector<Span> spans;                // per process (few)
  std::vector<uint32_t> pid_of(runs, 0);  // a run without ids is merged with none
  for (size_t r = 0; r < runs; ++r) {
    uint32_t last = 0;
    for (size_t j = 0; j < size(r); ++j) {
      const Entry e = entry(r, j);
      if (e.correlation == 0) continue;
      if (e.correlation < last) return false;
      last = e.correlation;
      auto it =
          std::find_if(spans.begin(), spans.end(), [&](const Span& s) { return s.pid == e.pid; });
      if (it == spans.end()) it = spans.insert(spans.end(), Span{e.pid});
      it->lo = std::min(it->lo, e.correlation), it->hi = std::max(it->hi, e.correlation), ++it->n;
      pid_of[r] = e.pid;
    }
  }
  for (const Span& s : spans)
    if (uint64_t(s.hi) - s.lo + 1 > 4 * s.n + 1024) return false;
  for (const Span& s : spans) {
    PidTable t;
    t.pid = s.pid;
    t.base = s.lo;
    t.packed.Reset(true, 0);
    // The runs' next entries, smallest (id, index) first.
    struct Next {
      uint32_t correlation, index;
      size_t run, j;
      bool operator>(const Next& o) const {
        return std::tie(correlation, index) > std::tie(o.correlation, o.index);
      }
    };
    std::priority_queue<Next, std::vector<Next>, std::greater<Next>> heap;
    auto push = [&](size_t r, size_t j) {
      for (; j < size(r); ++j)
        if (const Entry e = entry(r, j); e.correlation) {
          heap.push({e.correlation, e.index, r, j});
          return;
        }
    };
    for (size_t r = 0; r < runs; ++r)
      if (pid_of[r] == s.pid) push(r, 0);
    uint64_t next_id = s.lo;  // the id the column's next value is of
    uint32_t value = kNone;   // of id next_id, while its entries come
    while (!heap.empty()) {
      const Next n = heap.top();
      heap.pop();
      if (n.correlation != next_id) {  // id next_id is complete; ids up to this one have none
        t.packed.Append(value);
        for (++next_id; next_id < n.correlation; ++next_id) t.packed.Append(kNone);
      }
      value = n.index;
      push(n.run, n.j + 1);
    }
    t.packed.Append(value);
    tables_.push_back(std::move(t));
  }
  return true;
}

uint32_t CorrelationIndex::Find(uint32_t pid, uint32_t correlation) const {
  if (correlation == 0) return kNone;
  for (const PidTable& t : tables_) {
    if (t.pid != pid) continue;
    if (t.packed.size() != 0) {
      if (correlation < t.base || correlation - t.base >= t.packed.size()) return kNone;
      return t.packed[correlation - t.base];
    }
    if (!t.dense.empty()) {
      if (correlation < t.base || correlation - t.base >= t.dense.size()) return kNone;
      return t.dense[correlation - t.base];
    }
    auto it = std::upper_bound(t.sparse.begin(), t.sparse.end(), correlation,
                               [](uint32_t c, const Entry& e) { return c < e.correlation; });
    if (it == t.sparse.begin() || (it - 1)->correlation != correlation) return kNone;
    return (it - 1)->index;
  }
  return kNone;
}

// ---- ingest ----------------------------------------------------------------

CompactTrace::CompactTrace() {
  // TRACESMITH_RECORDS=packed|arrays: the form of every compact trace (tests run the
  // analyses in both); auto or unset: arrays here, by size in LoadCompactTrace.
  if (const char* env = std::getenv(kRecordFormEnv))
    if (const std::optional<RecordForm> form = ParseRecordForm(env)) SetRecordForm(*form);
}

uint32_t CompactTrace::GpuLane(uint32_t pid, uint32_t device, uint32_t stream) {
  const uint64_t key = GpuLaneKey(pid, device, stream);
  if (key == last_gpu_key_) return last_gpu_lane_;
  auto [it, added] = gpu_lane_index_.try_emplace(key, static_cast<uint32_t>(lanes_.size()));
  if (added) lanes_.push_back(Lane{.host = false, .pid = pid, .device = device, .stream = stream});
  last_gpu_key_ = key;
  last_gpu_lane_ = it->second;
  return it->second;
}

uint32_t CompactTrace::HostLane(uint32_t pid, uint32_t tid) {
  const uint64_t key = HostLaneKey(pid, tid);
  if (key == last_host_key_) return last_host_lane_;
  auto [it, added] = host_lane_index_.try_emplace(key, static_cast<uint32_t>(lanes_.size()));
  if (added) lanes_.push_back(Lane{.host = true, .pid = pid, .tid = tid});
  last_host_key_ = key;
  last_host_lane_ = it->second;
  return it->second;
}

void CompactTrace::RefreshMeta(const Trace& batch) {
  if (batch.strings.size() > meta_.strings.size()) meta_.strings = batch.strings;
  ForEachRecordType([&]<typename T>() {
    if constexpr (!RecordTraits<T>::kIsEvent) {
      if (batch.Rows<T>().size() != meta_.Rows<T>().size()) meta_.Rows<T>() = batch.Rows<T>();
    }
  });
}

// Reads and writes the records, lanes and samples only, never meta_ (nor String()): the
// loader refreshes the metadata on another thread meanwhile (IngestEvents).
template <typename T>
void CompactTrace::IngestRows(const std::vector<T>& rows) {
  stats_.events_ingested += rows.size();
  auto fix_end = [&](uint64_t s, uint64_t e) {
    if (e >= s) return e;
    stats_.inverted_intervals++;
    return s;
  };
  if constexpr (std::is_same_v<T, KernelEvent>) {
    for (const KernelEvent& e : rows) {
      GpuOp op;
      op.start_ns = e.start_ns;
      op.end_ns = fix_end(e.start_ns, e.end_ns);
      op.name_id = e.demangled_id ? e.demangled_id : e.name_id;
      op.correlation_id = e.correlation_id;
      op.lane_kind = GpuLane(e.pid, e.device_id, e.stream_id) << 2 | uint32_t(OpKind::kKernel);
      op.extra = graph_kernels_.Intern(e.pid, e.graph_id, e.graph_node_id);
      ops_.Add(op);
      ++kernels_per_pid_[e.pid];
    }
    pc_samples_.AddKernels(rows);
  } else if constexpr (std::is_same_v<T, MemcpyEvent> || std::is_same_v<T, MemsetEvent>) {
    constexpr bool kMemset = std::is_same_v<T, MemsetEvent>;
    for (const T& e : rows) {
      GpuOp op;
      op.start_ns = e.start_ns;
      op.end_ns = fix_end(e.start_ns, e.end_ns);
      op.correlation_id = e.correlation_id;
      op.lane_kind = GpuLane(e.pid, e.device_id, e.stream_id) << 2 |
                     uint32_t(kMemset ? OpKind::kMemset : OpKind::kMemcpy);
      op.extra = static_cast<uint32_t>(copies_.size());
      CopyInfo c;
      c.bytes = e.bytes;
      c.is_memset = kMemset;
      if constexpr (!kMemset) {
        c.src_device = e.src_device_id;
        c.dst_device = e.dst_device_id;
        c.copy_kind = e.copy_kind;
        c.src_kind = e.src_kind;
        c.dst_kind = e.dst_kind;
      } else {
        c.src_device = c.dst_device = e.device_id;
        c.dst_kind = e.memory_kind;
      }
      copies_.push_back(c);
      ops_.Add(op);
    }
  } else if constexpr (std::is_same_v<T, ApiEvent>) {
    for (const ApiEvent& e : rows) {
      HostCall c;
      c.start_ns = e.start_ns;
      c.end_ns = fix_end(e.start_ns, e.end_ns);
      c.correlation_id = e.correlation_id;
      c.stack_id = e.stack_id;
      c.name_id = e.name_id;
      c.lane = HostLane(e.pid, e.tid);
      calls_.Add(c);
    }
  } else if constexpr (std::is_same_v<T, SyncEvent>) {
    for (const SyncEvent& e : rows)
      syncs_.push_back(SyncRecord{.start_ns = e.start_ns,
                                  .end_ns = fix_end(e.start_ns, e.end_ns),
                                  .correlation_id = e.correlation_id,
                                  .event_id = e.event_id,
                                  .pid = e.pid,
                                  .device_id = e.device_id,
                                  .stream_id = e.stream_id,
                                  .sync_type = e.sync_type});
  } else if constexpr (std::is_same_v<T, NvtxRangeEvent>) {
    for (const NvtxRangeEvent& e : rows)
      nvtx_.push_back(
          NvtxRecord{e.start_ns, fix_end(e.start_ns, e.end_ns), e.name_id, HostLane(e.pid, e.tid)});
  } else if constexpr (std::is_same_v<T, NvtxPayloadEvent>) {
    for (const NvtxPayloadEvent& e : rows)
      nvtx_payloads_.push_back(NvtxPayloadRecord{e.ts_ns, HostLane(e.pid, e.tid), e.text_id});
  } else if constexpr (std::is_same_v<T, GraphLaunchEvent>) {
    for (const GraphLaunchEvent& e : rows)
      graphs_.push_back(GraphLaunchRecord{e.start_ns, fix_end(e.start_ns, e.end_ns),
                                          e.correlation_id, e.graph_id, e.pid, e.device_id});
  } else if constexpr (std::is_same_v<T, PcSampleEvent>) {
    pc_samples_.AddSamples(rows);
  } else if constexpr (std::is_same_v<T, KernelTimeoutEvent>) {
    timeouts_.insert(timeouts_.end(), rows.begin(), rows.end());
  } else if constexpr (std::is_same_v<T, GpuMetricSample>) {
    gpu_metrics_.Add(rows);
  } else if constexpr (std::is_same_v<T, AppCounterEvent>) {
    for (const AppCounterEvent& e : rows) {
      if (app_counters_.size() >= kMaxAppCounterPoints) {
        ++app_counters_dropped_;
        continue;
      }
      app_counters_.push_back(AppCounterPoint{e.ts_ns, e.value, e.pid, e.name_id});
    }
  } else if constexpr (std::is_same_v<T, AppEvent>) {
    for (const AppEvent& e : rows)
      if (e.kind == kAppRange)
        nvtx_.push_back(NvtxRecord{e.start_ns, fix_end(e.start_ns, e.end_ns), e.name_id,
                                   HostLane(e.pid, e.tid)});
  } else {
    stats_.events_ignored += rows.size();
  }
}

void CompactTrace::IngestEvents(const Trace& batch, TableKind kind) {
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) {
      if (RecordTraits<T>::kKind != kind) return;
      const std::vector<T>& rows = batch.Rows<T>();
      const auto other = [&](const T& e) { return e.pid != filter_pid_; };
      if (!filtered_ || std::none_of(rows.begin(), rows.end(), other)) {
        IngestRows(rows);
        return;
      }
      std::vector<T> mine;  // one chunk's rows of this process
      std::copy_if(rows.begin(), rows.end(), std::back_inserter(mine),
                   [&](const T& e) { return !other(e); });
      IngestRows(mine);
    }
  });
}

void CompactTrace::IngestAll(const Trace& trace) {
  RefreshMeta(trace);
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) IngestRows(trace.Rows<T>());
  });
}

// ---- finalize --------------------------------------------------------------

uint64_t ClockMap::operator()(uint64_t t) const {
  if (t == 0) return 0;  // 0 means "unknown" in the model
  __int128 d = static_cast<__int128>(t) - g0;
  if (linear) d = d * (r1 - r0) / (g1 - g0);
  __int128 r = r0 + d;
  return r < 0 ? 0 : static_cast<uint64_t>(r);
}

ClockAlignment ClockAlignment::Build(const std::set<uint32_t>& pids,
                                     const std::vector<ClockAnchor>& anchors) {
  ClockAlignment out;
  if (pids.size() < 2) return out;
  // A trace without any anchor has one time base for all its processes
  // (an import: torch.profiler writes device rows under their own pids).
  bool any_anchor = false;
  for (const ClockAnchor& a : anchors) any_anchor |= a.gpu_ns && a.realtime_ns;
  if (!any_anchor) return out;
  for (uint32_t pid : pids) {
    std::vector<ClockAnchor> mine;
    for (const ClockAnchor& a : anchors)
      if (a.pid == pid && a.gpu_ns && a.realtime_ns) mine.push_back(a);
    if (mine.empty()) {
      out.unaligned_++;
      continue;
    }
    std::sort(mine.begin(), mine.end(),
              [](const ClockAnchor& a, const ClockAnchor& b) { return a.gpu_ns < b.gpu_ns; });
    ClockMap m;
    m.g0 = static_cast<int64_t>(mine.front().gpu_ns);
    m.r0 = static_cast<int64_t>(mine.front().realtime_ns);
    m.g1 = static_cast<int64_t>(mine.back().gpu_ns);
    m.r1 = static_cast<int64_t>(mine.back().realtime_ns);
    m.linear = m.g1 != m.g0;
    out.maps_[pid] = m;
  }
  return out;
}

const ClockMap* ClockAlignment::MapOf(uint32_t pid) const {
  auto it = maps_.find(pid);
  return it == maps_.end() ? nullptr : &it->second;
}

void CompactTrace::AlignClocks() {
  std::set<uint32_t> pids;
  for (const Lane& l : lanes_) pids.insert(l.pid);
  for (const SyncRecord& s : syncs_) pids.insert(s.pid);
  for (const GraphLaunchRecord& g : graphs_) pids.insert(g.pid);
  clocks_ = ClockAlignment::Build(pids, meta_.Rows<ClockAnchor>());
  const ClockAlignment& align = clocks_;
  stats_.processes_unaligned += align.unaligned();
  if (!align.aligned()) return;
  stats_.clocks_aligned = true;
  std::vector<const ClockMap*> lane_map(lanes_.size(), nullptr);
  for (size_t l = 0; l < lanes_.size(); ++l) lane_map[l] = align.MapOf(lanes_[l].pid);
  // GPU ops and API calls: by their stores, after the lanes are sorted (SortAndIndex).
  for (NvtxRecord& n : nvtx_) ConvertInterval(lane_map[n.lane], &n.start_ns, &n.end_ns);
  for (NvtxPayloadRecord& p : nvtx_payloads_)
    if (const ClockMap* m = lane_map[p.lane]) p.ts_ns = (*m)(p.ts_ns);
  for (SyncRecord& s : syncs_) ConvertInterval(align.MapOf(s.pid), &s.start_ns, &s.end_ns);
  for (GraphLaunchRecord& g : graphs_) ConvertInterval(align.MapOf(g.pid), &g.start_ns, &g.end_ns);
  for (PcSamples::Window& w : pc_samples_.mutable_windows())
    ConvertInterval(align.MapOf(w.pid), &w.start_ns, &w.end_ns);
  for (auto& [key, points] : gpu_metrics_.mutable_series())
    for (GpuMetricSeries::Point& p : points)
      ConvertInterval(align.MapOf(key.pid), &p.start_ns, &p.end_ns);
  for (AppCounterPoint& p : app_counters_)
    if (const ClockMap* m = align.MapOf(p.pid)) p.ts_ns = (*m)(p.ts_ns);
  for (KernelTimeoutEvent& k : timeouts_) {
    uint64_t launch_end = k.launch_ns;
    ConvertInterval(align.MapOf(k.pid), &k.launch_ns, &launch_end);
    ConvertInterval(align.MapOf(k.pid), &k.start_ns, &k.end_ns);
  }
}

void CompactTrace::SortAndIndex() {
  // Renumber lanes in a stable, readable order: GPU streams by (pid, device,
  // stream), then host threads by (pid, tid).
  std::vector<uint32_t> order(lanes_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Lane &x = lanes_[a], &y = lanes_[b];
    return std::tie(x.host, x.pid, x.device, x.stream, x.tid) <
           std::tie(y.host, y.pid, y.device, y.stream, y.tid);
  });
  std::vector<uint32_t> remap(lanes_.size());
  std::vector<Lane> lanes(lanes_.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    remap[order[i]] = i;
    lanes[i] = lanes_[order[i]];
  }
  lanes_.swap(lanes);
  for (NvtxRecord& n : nvtx_) n.lane = remap[n.lane];
  for (NvtxPayloadRecord& p : nvtx_payloads_) p.lane = remap[p.lane];
  gpu_lane_index_.clear();
  host_lane_index_.clear();

  // Each lane in time order, its times on the common clock (record_store.h).
  auto map_of = [&](uint32_t lane) { return clocks_.MapOf(lanes_[lane].pid); };
  stats_.lanes_resorted += ops_.Finish(remap, map_of) + calls_.Finish(remap, map_of);
  ComputeRanges();
  std::sort(nvtx_.begin(), nvtx_.end(), [](const NvtxRecord& a, const NvtxRecord& b) {
    return std::tie(a.lane, a.start_ns, a.end_ns) < std::tie(b.lane, b.start_ns, b.end_ns);
  });
  std::sort(nvtx_payloads_.begin(), nvtx_payloads_.end(),
            [](const NvtxPayloadRecord& a, const NvtxPayloadRecord& b) {
              return std::tie(a.lane, a.ts_ns) < std::tie(b.lane, b.ts_ns);
            });
  std::stable_sort(syncs_.begin(), syncs_.end(), [](const SyncRecord& a, const SyncRecord& b) {
    return a.start_ns < b.start_ns;
  });
  std::stable_sort(graphs_.begin(), graphs_.end(),
                   [](const GraphLaunchRecord& a, const GraphLaunchRecord& b) {
                     return a.start_ns < b.start_ns;
                   });
  BuildIndexes();
}

void CompactTrace::ComputeRanges() {
  ranges_.assign(lanes_.size(), LaneRange{});
  ops_.Ranges(&ranges_);
  calls_.Ranges(&ranges_);
  gpu_lanes_.clear();
  devices_.clear();
  for (uint32_t l = 0; l < lanes_.size(); ++l) {
    if (lanes_[l].host || ranges_[l].begin == ranges_[l].end) continue;
    gpu_lanes_.push_back(l);
    devices_.push_back(lanes_[l].device);
  }
  std::sort(devices_.begin(), devices_.end());
  devices_.erase(std::unique(devices_.begin(), devices_.end()), devices_.end());
}

void CompactTrace::BuildIndexes() {
  // Sync records point at the GPU lane they block or wait for.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> by_key;
  for (uint32_t l : gpu_lanes_) by_key[{lanes_[l].pid, lanes_[l].device, lanes_[l].stream}] = l;
  for (SyncRecord& s : syncs_) {
    auto it = by_key.find({s.pid, s.device_id, s.stream_id});
    s.lane = it == by_key.end() ? kNone : it->second;
  }
  // The correlation indexes: at their first use (IndexCorrelations), once after the last
  // restriction.
  op_call_.Reset(false, 0);
  call_op_.Reset(false, 0);
  index_state_.built.store(false, std::memory_order_release);
}

void CompactTrace::BuildCorrelationIndexes() const {
  std::lock_guard<std::mutex> lock(index_state_.mu);
  if (index_state_.built.load(std::memory_order_acquire)) return;  // another thread built them
  // Built from the records in place (CorrelationIndex::Build); BuildIndexes emptied both.
  auto each_call = [&](const auto& fn) {
    calls_.ForEach([&](size_t i, const HostCall& c) {
      if (c.correlation_id) fn({PidOfLane(c.lane), c.correlation_id, uint32_t(i)});
    });
  };
  // The calls' correlation index beside the records (the peak of a 100 M-kernel trace), gone
  // once op_call_ is filled; call_op_ is op_call_ inverted.
  op_call_.Reset(ops_.form() == RecordForm::kPacked, ops_.size());
  {
    CorrelationIndex call_by_corr;
    // Packed records: the calls' table packed too, from the host lanes merged by id (their
    // ids rise with their calls' starts); else, or when they do not, 4 bytes an id.
    std::vector<uint32_t> host;
    for (uint32_t l = 0; l < lanes_.size(); ++l)
      if (lanes_[l].host && ranges_[l].end > ranges_[l].begin) host.push_back(l);
    auto size = [&](size_t r) { return size_t(ranges_[host[r]].end - ranges_[host[r]].begin); };
    auto entry = [&](size_t r, size_t j) {
      const uint32_t i = ranges_[host[r]].begin + uint32_t(j);
      return CorrelationIndex::Entry{lanes_[host[r]].pid, calls_[i].correlation_id, i};
    };
    if (calls_.form() != RecordForm::kPacked || !call_by_corr.BuildPacked(host.size(), size, entry))
      call_by_corr.Build(each_call);
    ops_.ForEach([&](size_t, const GpuOp& o) {
      op_call_.Append(call_by_corr.Find(PidOfLane(o.lane()), o.correlation_id));
    });
  }
  InvertOpCall();
  index_state_.built.store(true, std::memory_order_release);
}

void CompactTrace::InvertOpCall() const {
  // call_op_ is op_call_ inverted: each call's ops, the last-ending one when several (a graph
  // launch runs many kernels: the op the call waited for), later ones winning ties. Arrays:
  // one pass. Packed: the calls in windows (of 4 M: 16 MB), each window's ops found through the
  // blocks of op_call_ whose calls reach into it (a stream's calls advance with its ops: a
  // block or two per window), not a table of 4 bytes a call (409 MB at 100 M kernels).
  const size_t n = calls_.size();
  auto place = [&](std::vector<uint32_t>& slot, uint32_t k, uint32_t op) {
    if (slot[k] == kNone || ops_[op].end_ns >= ops_[slot[k]].end_ns) slot[k] = op;
  };
  if (ops_.form() != RecordForm::kPacked) {
    std::vector<uint32_t> call_op(n, kNone);
    for (uint32_t op = 0; op < op_call_.size(); ++op)
      if (const uint32_t c = op_call_[op]; c != kNone) place(call_op, c, op);
    call_op_.Adopt(std::move(call_op));
    return;
  }
  const size_t window_calls = inversion_window_;
  call_op_.Reset(true, n);
  std::vector<uint32_t> window;
  const size_t blocks = (op_call_.size() + IndexColumn::kBlock - 1) / IndexColumn::kBlock;
  for (size_t c0 = 0; c0 < n; c0 += window_calls) {
    const size_t c1 = std::min(n, c0 + window_calls);
    window.assign(c1 - c0, kNone);
    for (size_t b = 0; b < blocks; ++b) {
      const auto [lo, hi] = op_call_.BlockRange(b);
      if (hi < c0 || lo >= c1) continue;
      const size_t end = std::min(op_call_.size(), (b + 1) * IndexColumn::kBlock);
      for (size_t op = b * IndexColumn::kBlock; op < end; ++op)
        if (const uint32_t c = op_call_[op]; c != kNone && c >= c0 && c < c1)
          place(window, uint32_t(c - c0), uint32_t(op));
    }
    for (uint32_t op : window) call_op_.Append(op);
  }
}

void CompactTrace::Finalize() {
  if (finalized_) return;
  finalized_ = true;
  const auto t0 = std::chrono::steady_clock::now();
  // Grown by doubling while ingesting: up to twice their size held to the end (the copies
  // took 50 MB at 100 M kernels, heaptrack; what this saves at the peak was not measured
  // apart).
  copies_.shrink_to_fit();
  syncs_.shrink_to_fit();
  nvtx_.shrink_to_fit();
  graphs_.shrink_to_fit();
  AlignClocks();
  graph_kernels_.Resolve(meta_);
  gpu_metrics_.Sort();
  std::stable_sort(
      app_counters_.begin(), app_counters_.end(),
      [](const AppCounterPoint& a, const AppCounterPoint& b) { return a.ts_ns < b.ts_ns; });
  SortAndIndex();
  uint64_t lo = UINT64_MAX, hi = 0;
  auto span = [&](uint64_t s, uint64_t e) {
    lo = std::min(lo, s);
    hi = std::max(hi, e);
  };
  ops_.ForEach([&](size_t, const GpuOp& o) { span(o.start_ns, o.end_ns); });
  calls_.ForEach([&](size_t, const HostCall& c) { span(c.start_ns, c.end_ns); });
  for (const SyncRecord& s : syncs_) span(s.start_ns, s.end_ns);
  for (const NvtxRecord& n : nvtx_) span(n.start_ns, n.end_ns);
  for (const GraphLaunchRecord& g : graphs_) span(g.start_ns, g.end_ns);
  if (lo > hi) lo = hi = 0;
  trace_begin_ = window_begin_ = lo;
  window_end_ = hi;
  stats_.finalize_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<uint32_t> CompactTrace::DeviceLanes(uint32_t device) const {
  std::vector<uint32_t> out;
  for (uint32_t l : gpu_lanes_)
    if (lanes_[l].device == device) out.push_back(l);
  return out;
}

// ---- restriction -----------------------------------------------------------

void CompactTrace::RestrictWindow(uint64_t from, uint64_t to) {
  // Half-open intervals: one that only touches the window is outside it;
  // an instant (s == e) is inside when it lies in [from, to].
  auto outside = [&](uint64_t s, uint64_t e) {
    return s == e ? (s < from || s > to) : (e <= from || s >= to);
  };
  // The ops on another thread, the calls here.
  std::thread ops_thread(
      [&] { ops_.Filter([&](size_t, const GpuOp& o) { return !outside(o.start_ns, o.end_ns); }); });
  calls_.Filter([&](size_t, const HostCall& c) { return !outside(c.start_ns, c.end_ns); });
  ops_thread.join();
  std::erase_if(syncs_, [&](const SyncRecord& s) { return outside(s.start_ns, s.end_ns); });
  std::erase_if(nvtx_, [&](const NvtxRecord& n) { return outside(n.start_ns, n.end_ns); });
  std::erase_if(graphs_, [&](const GraphLaunchRecord& g) { return outside(g.start_ns, g.end_ns); });
  window_begin_ = std::max(window_begin_, from);
  window_end_ = std::max(window_begin_, std::min(window_end_, to));
  ComputeRanges();
  BuildIndexes();
}

namespace {

// [b, e) with the calls that overlap it: their time inside it, and the longest three.
CompactTrace::OutsideSpan SpanWithCalls(const RecordStore<CallCodec>& calls, uint64_t b,
                                        uint64_t e) {
  CompactTrace::OutsideSpan s;
  s.begin = b;
  s.end = std::max(b, e);
  // The longest calls that overlap the span, by their time inside it.
  calls.ForEach([&](size_t, const HostCall& c) {
    const uint64_t cb = std::max(c.start_ns, s.begin), ce = std::min(c.end_ns, s.end);
    if (ce <= cb) return;
    s.api_ns += ce - cb;
    s.longest_calls.push_back({c.name_id, c.start_ns, ce - cb});
    std::sort(s.longest_calls.begin(), s.longest_calls.end(),
              [](const CompactTrace::OutsideSpan::Call& x,
                 const CompactTrace::OutsideSpan::Call& y) { return x.ns > y.ns; });
    if (s.longest_calls.size() > 3) s.longest_calls.pop_back();
  });
  return s;
}

}  // namespace

void CompactTrace::RestrictToActiveRegion() {
  if (ops_.empty()) return;
  // From the first kernel (copies before it are uploads of weights and data:
  // start-up) to the end of the last GPU op of any kind.
  uint64_t first = UINT64_MAX, first_op = UINT64_MAX, last = 0;
  ops_.ForEach([&](size_t, const GpuOp& o) {
    if (o.kind() == OpKind::kKernel) first = std::min(first, o.start_ns);
    first_op = std::min(first_op, o.start_ns);
    last = std::max(last, o.end_ns);
  });
  active_.kernels = first != UINT64_MAX;
  if (first == UINT64_MAX) first = first_op;
  first = std::max(first, window_begin_);
  last = std::min(last, window_end_);
  if (first >= last) return;
  active_.applied = true;
  active_.startup = SpanWithCalls(calls_, window_begin_, first);
  active_.teardown = SpanWithCalls(calls_, last, window_end_);
  RestrictWindow(first, last);
}

void CompactTrace::SetWarmupApart(uint64_t steady_begin, ChosenSteps steps) {
  if (!active_.applied || steady_begin <= window_begin_ || steady_begin >= window_end_) return;
  active_.warmup = SpanWithCalls(calls_, window_begin_, steady_begin);
  RestrictWindow(steady_begin, window_end_);
  chosen_steps_ = std::move(steps);
}

Status CompactTrace::RestrictToNvtx(const std::string& name) {
  // Per host lane, the union of that lane's ranges with this name.
  std::vector<std::vector<Interval>> inside(lanes_.size());
  size_t found = 0;
  for (const NvtxRecord& n : nvtx_) {
    if (String(n.name_id) != name) continue;
    ++found;
    inside[n.lane].push_back({n.start_ns, n.end_ns});
  }
  if (!found) return NotFound("no NVTX range is named '" + name + "'");
  for (auto& v : inside) {
    std::sort(v.begin(), v.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    std::vector<Interval> u;
    for (const Interval& i : v) AppendUnion(&u, i.start, i.end);
    v.swap(u);
  }
  auto in_range = [&](uint32_t lane, uint64_t t) {
    const auto& v = inside[lane];
    auto it = std::upper_bound(v.begin(), v.end(), t,
                               [](uint64_t x, const Interval& i) { return x < i.start; });
    return it != v.begin() && t <= (it - 1)->end;
  };
  std::vector<uint8_t> keep_call(calls_.size());
  std::set<std::pair<uint32_t, uint32_t>> kept_corr;
  calls_.ForEach([&](size_t i, const HostCall& c) {
    keep_call[i] = in_range(c.lane, c.start_ns);
    if (keep_call[i]) kept_corr.insert({PidOfLane(c.lane), c.correlation_id});
  });
  ops_.Filter([&](size_t i, const GpuOp&) {
    const uint32_t c = CallOfOp(static_cast<uint32_t>(i));
    return c != kNone && keep_call[c];
  });
  calls_.Filter([&](size_t i, const HostCall&) { return keep_call[i] != 0; });
  std::erase_if(syncs_, [&](const SyncRecord& s) {
    return !kept_corr.count({s.pid, s.correlation_id});
  });
  std::erase_if(graphs_, [&](const GraphLaunchRecord& g) {
    return !kept_corr.count({g.pid, g.correlation_id});
  });
  std::erase_if(nvtx_, [&](const NvtxRecord& n) { return String(n.name_id) != name; });
  uint64_t lo = UINT64_MAX, hi = 0;
  ops_.ForEach(
      [&](size_t, const GpuOp& o) { lo = std::min(lo, o.start_ns), hi = std::max(hi, o.end_ns); });
  calls_.ForEach([&](size_t, const HostCall& c) {
    lo = std::min(lo, c.start_ns), hi = std::max(hi, c.end_ns);
  });
  if (lo > hi) lo = hi = window_begin_;
  window_begin_ = lo;
  window_end_ = hi;
  ComputeRanges();
  BuildIndexes();
  return OkStatus();
}

}  // namespace tracesmith::analysis
