#include "tracesmith/replay/emulator.h"
#include "tracesmith/base/pattern.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "schedule_inputs.h"
#include "tracesmith/analysis/dependency_graph.h"
#include "tracesmith/base/statistics.h"

namespace tracesmith::replay {

using analysis::CompactTrace;
using analysis::DependencyRules;
using analysis::Edge;
using analysis::EdgeKind;
using analysis::GpuOp;
using analysis::kNone;
using analysis::NodeKind;
using analysis::NodeRef;
using analysis::OpKind;
using ScheduledOp = EmulationResult::ScheduledOp;
using internal::FromStart;
using internal::IsStartEdge;

StatusOr<KernelScale> ParseKernelScale(const std::string& spec) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    return InvalidArgument("--scale-kernel '" + spec + "': expected REGEX=FACTOR, e.g. 'gemm=0.5'");
  KernelScale s;
  s.pattern = spec.substr(0, eq);
  char* end = nullptr;
  const std::string f = spec.substr(eq + 1);
  s.factor = std::strtod(f.c_str(), &end);
  if (end == f.c_str() || *end != '\0' || !(s.factor > 0) || !std::isfinite(s.factor))
    return InvalidArgument("--scale-kernel '" + spec + "': factor '" + f +
                           "' is not a positive number");
  if (auto p = Pattern::Compile(s.pattern, /*optimize=*/false); !p.ok())
    return InvalidArgument("--scale-kernel '" + spec + "': bad regex: " + p.status().message());
  return s;
}

namespace {

// Predicted times of the half-nodes that will still be read: an
// open-addressing table (linear probing, deletion by backward shift). The
// sweep keeps only a window of the trace here (launches not yet reached by
// their ops, the latest op of each stream, ...), not one time per half-node.
class LiveTimes {
 public:
  LiveTimes() { Rehash(1024); }
  void Put(uint32_t key, int64_t v) {
    if ((size_ + 1) * 2 > keys_.size()) Rehash(keys_.size() * 2);
    size_t i = Home(key);
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask_;
    if (keys_[i] == kEmpty) size_++;
    keys_[i] = key;
    vals_[i] = v;
  }
  int64_t Get(uint32_t key) const { return vals_[Find(key)]; }
  void Erase(uint32_t key) {
    size_t i = Find(key);
    for (size_t j = (i + 1) & mask_; keys_[j] != kEmpty; j = (j + 1) & mask_) {
      // Move an entry back into the hole unless its home lies in (i, j].
      if (((j - Home(keys_[j])) & mask_) >= ((j - i) & mask_)) {
        keys_[i] = keys_[j];
        vals_[i] = vals_[j];
        i = j;
      }
    }
    keys_[i] = kEmpty;
    size_--;
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;  // never a half-node (ids < 2^31)
  size_t Home(uint32_t key) const {
    return size_t((uint64_t(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  size_t Find(uint32_t key) const {
    size_t i = Home(key);
    while (keys_[i] != key) {
      if (keys_[i] == kEmpty) std::abort();  // invariant: a value is put before it is read
      i = (i + 1) & mask_;
    }
    return i;
  }
  void Rehash(size_t capacity) {
    std::vector<uint32_t> keys(capacity, kEmpty);
    std::vector<int64_t> vals(capacity);
    keys.swap(keys_);
    vals.swap(vals_);
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) Put(keys[i], vals[i]);
  }
  std::vector<uint32_t> keys_;
  std::vector<int64_t> vals_;
  size_t size_ = 0, mask_ = 0;
  int shift_ = 0;
};

// Per half-node, in 4 bits (200 MB at 100 M kernels, not 400 MB of read counts and 50 MB
// of flags apart): whether it is evaluated, and the reads of its predicted time still to
// come; from kOver reads on the count lives in a map (rare: a half-node read by many, an
// event many streams wait for). Reads saturate at kKeep: kept to the end.
class HalfNodes {
 public:
  static constexpr uint32_t kKeep = 255;
  void Assign(size_t n) {
    size_ = n;
    nibbles_.assign((n + 1) / 2, 0);
    over_.clear();
  }
  size_t size() const { return size_; }
  bool Done(uint32_t h) const { return Nibble(h) & kDone; }
  void SetDone(uint32_t h) { SetNibble(h, Nibble(h) | kDone); }
  uint32_t Reads(uint32_t h) const {
    const uint32_t v = Nibble(h) & kOver;
    return v == kOver ? over_.find(h)->second : v;
  }
  void AddRead(uint32_t h) {
    const uint32_t v = Reads(h);
    if (v < kKeep) SetReads(h, v + 1);
  }
  // One read done: whether none is left (never for a kept one).
  bool Release(uint32_t h) {
    const uint32_t v = Reads(h);
    if (v == kKeep || v == 0) return false;
    SetReads(h, v - 1);
    return v == 1;
  }

 private:
  static constexpr uint32_t kOver = 7, kDone = 8;
  uint32_t Nibble(uint32_t h) const { return (nibbles_[h / 2] >> (4 * (h & 1))) & 15u; }
  void SetNibble(uint32_t h, uint32_t v) {
    const uint32_t shift = 4 * (h & 1);
    nibbles_[h / 2] = uint8_t((nibbles_[h / 2] & ~(15u << shift)) | v << shift);
  }
  void SetReads(uint32_t h, uint32_t v) {
    const uint32_t was = Nibble(h);
    if (v >= kOver) {
      over_[h] = uint8_t(v);
    } else if ((was & kOver) == kOver) {
      over_.erase(h);
    }
    SetNibble(h, (was & kDone) | std::min(v, kOver));
  }
  size_t size_ = 0;
  std::vector<uint8_t> nibbles_;
  std::unordered_map<uint32_t, uint8_t> over_;
};

// Launch latencies, for their median (NearestRankIndex): counted by value below kNarrow ns,
// kept whole above (rare).
class LatencyCounts {
 public:
  void Add(uint64_t v) {
    if (v >= kNarrow) {
      wide_.push_back(v);
      return;
    }
    if (counts_.empty()) counts_.assign(kNarrow, 0);
    ++counts_[v];
    ++narrow_;
  }
  size_t count() const { return narrow_ + wide_.size(); }
  // Every narrow value is below every wide one. At least one value.
  uint64_t Median() {
    size_t k = NearestRankIndex(count(), 0.5);
    if (k >= narrow_) {
      const auto w = wide_.begin() + std::ptrdiff_t(k - narrow_);
      std::nth_element(wide_.begin(), w, wide_.end());
      return *w;
    }
    for (uint64_t v = 0;; ++v) {
      if (k < counts_[v]) return v;
      k -= counts_[v];
    }
  }

 private:
  static constexpr uint64_t kNarrow = uint64_t(1) << 20;
  std::vector<uint32_t> counts_;  // node ids fit 31 bits: so do the counts
  size_t narrow_ = 0;
  std::vector<uint64_t> wide_;
};

class Scheduler : internal::ScheduleInputs {
 public:
  using ScheduleInputs::ScheduleInputs;

  Status Run() {
    if (uint64_t(nops_) + ncalls_ + nsyncs_ >= (1u << 31))
      return InvalidArgument("schedule emulation: more than 2^31 ops, API calls and syncs");
    RETURN_IF_ERROR(PrepareScales());
    PrepareSyncCalls();
    PrepareVirtualStreams();
    t_.IndexCorrelations();  // its transient table before nodes_, not beside it
    CountReferences();
    PrepareSweep();
    RETURN_IF_ERROR(Sweep());
    ForceCycles();
    Summarize();
    return OkStatus();
  }

 private:
  // Half-nodes: 2*id is node id's start, 2*id+1 its end. Each has in-edges
  // (predecessor half-node + delay) and, for a root (a start without a
  // binding start edge: first call on a thread, ...), its recorded start as a
  // base; its time is max(base, max(pred + delay)). Edges and delays depend on
  // recorded times only, so they are recomputed from DependencyRules when a
  // half-node is evaluated instead of being stored (the graph at 10 M kernels
  // would be about 1.6 GB).
  struct InEdge {
    uint32_t from;  // half-node
    int64_t delay;
  };
  static uint32_t Half(uint32_t id, bool end) { return 2 * id + (end ? 1 : 0); }

  // In-edges of half-node `h` into `out`; *root: `h` keeps its recorded start.
  // `count`: add to the result's counters (the first pass only, once per node).
  // *launch_gap: for an op start bound by its launch, op start - call start.
  void InEdges(uint32_t h, bool count, std::vector<InEdge>* out, bool* root,
               uint64_t* launch_gap = nullptr) {
    out->clear();
    *root = false;
    if (h & 1)
      EndEdges(h / 2, count, out);
    else
      StartInEdges(h / 2, count, out, root, launch_gap);
  }

  void StartInEdges(uint32_t id, bool count, std::vector<InEdge>* out, bool* root,
                    uint64_t* launch_gap) {
    NodeRef n = Ref(id);
    const uint64_t rec = rules_.Start(n);
    StartEdges(id, &edges_);
    const Edge* bind = BindingStart(edges_, rec);
    if (!bind) {  // a root (first call on a thread, ...) keeps its recorded time
      *root = true;
      if (count) r_->contradicting_edges += edges_.size();
      return;
    }
    if (launch_gap && FromStart(bind->kind)) *launch_gap = rec - rules_.Start(bind->from);
    for (const Edge& e : edges_) {
      const bool fs = FromStart(e.kind);
      const uint64_t ref = fs ? rules_.Start(e.from) : rules_.End(e.from);
      int64_t d = 0;
      if (&e == bind) {
        d = int64_t(rec - ref);
      } else if (fs && ref <= rec) {
        d = int64_t(std::min<uint64_t>(rec - ref, launch_floor_));
      } else if (ref > rec) {
        // Recorded to end after this node started: an inferred edge that did
        // not hold. Only --streams creates such orderings on purpose.
        if (!(o_.streams && e.kind == EdgeKind::kStreamOrder)) {
          if (count) r_->contradicting_edges++;
          continue;
        }
      }
      out->push_back({Half(Id(e.from), !fs), d});
    }
  }

  // The first in-edge of an end is always the node's own start.
  void EndEdges(uint32_t id, bool count, std::vector<InEdge>* out) {
    NodeRef n = Ref(id);
    const uint64_t rs = rules_.Start(n), re = rules_.End(n);
    if (n.kind == NodeKind::kOp) {
      const double dur = double(re - rs) * Scale(n.index);
      out->push_back({Half(id, false), int64_t(std::llround(dur))});
      return;
    }
    if (RemovedSync(n)) {  // the wait disappears: no duration, no predecessors
      out->push_back({Half(id, false), 0});
      if (count) r_->syncs_removed++;
      return;
    }
    scratch_.clear();
    rules_.Predecessors(n, &scratch_);
    const Edge* bind = nullptr;
    uint64_t best = 0;
    for (const Edge& e : scratch_) {
      if (IsStartEdge(e.kind)) continue;
      uint64_t pe = rules_.End(e.from);
      if (pe < rs || pe > re) continue;
      if (!bind || pe > best) bind = &e, best = pe;
    }
    // Waiting on a binding predecessor: the node lasts until it ends (+ the
    // recorded return latency); otherwise it keeps its own recorded duration.
    out->push_back({Half(id, false), bind ? 0 : int64_t(re - rs)});
    for (const Edge& e : scratch_) {
      if (IsStartEdge(e.kind)) continue;
      if (rules_.End(e.from) > re) {  // e.g. cudaStreamWaitEvent returns before its wait ends
        if (count) r_->contradicting_edges++;
        continue;
      }
      out->push_back({Half(Id(e.from), true), &e == bind ? int64_t(re - best) : 0});
    }
  }

  uint64_t RecordedTime(uint32_t half) const {
    NodeRef r = Ref(half / 2);
    return half & 1 ? rules_.End(r) : rules_.Start(r);
  }

  // First pass: how many in-edges read each half-node (so that its predicted
  // time can be dropped after the last read; 255 = kept to the end), the
  // recorded span, and the launch latency floor: the median latency (op start
  // - call start) of launches that were not queued behind other work, the
  // least delay a launch edge keeps when it is not binding.
  void CountReferences() {
    const uint32_t n = nops_ + ncalls_ + nsyncs_;
    nodes_.Assign(size_t(n) * 2);
    // The latencies counted by value (exact: 4 MB for those under 2^20 ns, nearly all), the
    // rare longer one kept apart; their median is the NearestRank one of them all. (Kept as
    // 4-byte values they took 140 MB at 100 M kernels: 35 M unqueued launches.)
    LatencyCounts gaps;
    bool root = false;
    for (uint32_t id = 0; id < n; ++id) {
      for (bool end : {false, true}) {
        uint64_t gap = UINT64_MAX;
        InEdges(Half(id, end), true, &in_, &root, id < nops_ ? &gap : nullptr);
        if (gap != UINT64_MAX) gaps.Add(gap);
        for (const InEdge& e : in_) nodes_.AddRead(e.from);
      }
      rec_begin_ = std::min(rec_begin_, rules_.Start(Ref(id)));
      rec_end_ = std::max(rec_end_, rules_.End(Ref(id)));
    }
    if (gaps.count() == 0) return;
    launch_floor_ = gaps.Median();
    r_->launch_floor_ns = launch_floor_;
  }

  // Second pass: the half-nodes in recorded-time order, starts merged from
  // every lane (and the syncs), each end when the sweep reaches its recorded
  // time. Every kept edge comes from a half-node recorded no later (others
  // are contradicting and dropped), except --streams' stream order, so most
  // half-nodes find their predecessors evaluated; the others (equal times,
  // --streams) wait for them. The predicted times do not depend on the order
  // of evaluation, only on the graph: the result is that of a topological
  // evaluation of the whole graph.
  struct Cursor {
    uint64_t time;
    uint8_t rank;  // at equal times: what usually comes first in the graph
    uint32_t id, last;
    bool operator>(const Cursor& o) const {
      return std::tie(time, rank, id) > std::tie(o.time, o.rank, o.id);
    }
  };
  template <typename T>
  using MinHeap = std::priority_queue<T, std::vector<T>, std::greater<T>>;

  Status Sweep() {
    MinHeap<Cursor> starts, ends;
    auto add_lane = [&](uint32_t begin, uint32_t end, uint32_t base, uint8_t rank) {
      if (begin < end)
        starts.push({rules_.Start(Ref(base + begin)), rank, base + begin, base + end});
    };
    // Equal start times: calls launch syncs and ops; equal ends: ops end
    // syncs, syncs end calls; ends before starts (stream and thread order).
    for (uint32_t l = 0; l < t_.lanes().size(); ++l) {
      const analysis::LaneRange r = t_.lane_range(l);
      if (t_.lanes()[l].host)
        add_lane(r.begin, r.end, nops_, 0);
      else
        add_lane(r.begin, r.end, 0, 2);
    }
    add_lane(0, nsyncs_, nops_ + ncalls_, 1);
    auto end_rank = [&](uint32_t id) -> uint8_t {
      return id < nops_ ? 0 : id < nops_ + ncalls_ ? 2 : 1;
    };
    while (!starts.empty()) {
      Cursor c = starts.top();
      starts.pop();
      while (!ends.empty() && ends.top().time <= c.time) {
        Visit(Half(ends.top().id, true));
        ends.pop();
      }
      Visit(Half(c.id, false));
      ends.push({rules_.End(Ref(c.id)), end_rank(c.id), c.id, 0});
      if (++c.id < c.last) {
        c.time = rules_.Start(Ref(c.id));
        starts.push(c);
      }
    }
    for (; !ends.empty(); ends.pop()) Visit(Half(ends.top().id, true));
    if (visited_ != nodes_.size())  // the lanes' ranges cover every op and call
      return Internal("schedule emulation: " + std::to_string(visited_) + " of " +
                      std::to_string(nodes_.size()) + " half-nodes reached");
    return OkStatus();
  }

  bool Done(uint32_t h) const { return nodes_.Done(h); }

  void Visit(uint32_t h) {
    visited_++;
    bool root = false;
    InEdges(h, false, &in_, &root);
    uint32_t waiting = 0;
    for (const InEdge& e : in_) {
      if (Done(e.from)) continue;
      waiters_[e.from].push_back(h);
      waiting++;
    }
    if (waiting) {
      waiting_[h] = waiting;
      return;
    }
    Evaluate(h, root);
    Release(h);
  }

  // Evaluates the waiters whose last predecessor was `h`, and theirs.
  void Release(uint32_t h) {
    if (waiters_.empty()) return;
    std::vector<uint32_t> stack{h};
    bool root = false;
    while (!stack.empty()) {
      auto it = waiters_.find(stack.back());
      stack.pop_back();
      if (it == waiters_.end()) continue;
      std::vector<uint32_t> list = std::move(it->second);
      waiters_.erase(it);
      for (uint32_t w : list) {
        if (Done(w)) continue;  // forced (a cycle)
        auto p = waiting_.find(w);
        if (--p->second) continue;
        waiting_.erase(p);
        InEdges(w, false, &in_, &root);
        Evaluate(w, root);
        stack.push_back(w);
      }
    }
  }

  // What-if edges (--streams) can in rare cases close a cycle: the half-nodes
  // left waiting are then taken in recorded-time order, each forced with the
  // predecessors already evaluated (the others counted), as Kahn's algorithm
  // over the whole graph would.
  void ForceCycles() {
    if (waiting_.empty()) return;
    std::vector<uint32_t> left;
    for (const auto& [h, count] : waiting_) left.push_back(h);
    std::sort(left.begin(), left.end(), [&](uint32_t a, uint32_t b) {
      return std::make_pair(RecordedTime(a), a) < std::make_pair(RecordedTime(b), b);
    });
    bool root = false;
    for (uint32_t h : left) {
      if (Done(h)) continue;
      waiting_.erase(h);
      InEdges(h, false, &in_, &root);
      Evaluate(h, root);
      Release(h);
    }
  }

  // Reads a predecessor's time; the last read drops it.
  int64_t Take(uint32_t h) {
    const int64_t v = live_.Get(h);
    if (nodes_.Release(h)) live_.Erase(h);
    return v;
  }

  void Evaluate(uint32_t h, bool root) {
    int64_t v = !(h & 1) && root ? int64_t(RecordedTime(h)) : kNoBase;
    int64_t own_start = kNoBase;
    for (const InEdge& e : in_) {
      if (!Done(e.from)) {
        r_->out_of_order_refs++;
        continue;
      }
      const int64_t p = Take(e.from);
      if (e.from == h - 1 && (h & 1)) own_start = p;
      v = std::max(v, p + e.delay);
    }
    if (v == kNoBase) v = int64_t(RecordedTime(h));
    nodes_.SetDone(h);
    if (nodes_.Reads(h)) live_.Put(h, v);
    const uint32_t id = h / 2;
    if (h & 1) {
      pred_end_ = std::max(pred_end_, v);
    } else {
      pred_begin_ = std::min(pred_begin_, v);
    }
    if (id >= nops_) return;
    if (o_.op_times) (h & 1 ? r_->op_end : r_->op_start)[id] = v;
    // An op's summary needs both times: its end normally reads its start;
    // a forced end (a cycle) may come first.
    if (h & 1) {
      if (own_start != kNoBase)
        OpDone(id, own_start, v);
      else
        early_end_[id] = v;
    } else if (Done(h + 1)) {
      auto it = early_end_.find(id);
      OpDone(id, v, it->second);
      early_end_.erase(it);
    }
  }

  // Per-stream totals, and the first schedule_rows ops by predicted start
  // (ties by index), kept as a max-heap of that size.
  void OpDone(uint32_t i, int64_t start, int64_t end) {
    const GpuOp op = t_.ops()[i];
    uint32_t& slot = lane_slot_[op.lane()];
    if (slot == kNone) {
      const auto& lane = t_.lanes()[op.lane()];
      auto key = std::make_tuple(lane.pid, lane.device, lane_stream_[op.lane()]);
      auto [it, fresh] = stream_index_.try_emplace(key, r_->streams.size());
      if (fresh) {
        EmulatedStream s;
        s.pid = lane.pid;
        s.device = lane.device;
        s.stream = lane_stream_[op.lane()];
        s.first_start = start;  // absolute until Summarize
        s.last_end = end;
        r_->streams.push_back(s);
      }
      slot = uint32_t(it->second);
    }
    EmulatedStream& s = r_->streams[slot];
    s.ops++;
    s.busy_ns += uint64_t(end - start);
    s.recorded_busy_ns += op.duration();
    s.first_start = std::min(s.first_start, start);
    s.last_end = std::max(s.last_end, end);
    if (o_.schedule_rows == 0) return;
    const ScheduledOp row{i, start, end};
    auto later = [](const ScheduledOp& a, const ScheduledOp& b) {
      return std::tie(a.start, a.op) < std::tie(b.start, b.op);
    };
    auto& rows = r_->schedule;
    if (rows.size() < o_.schedule_rows) {
      rows.push_back(row);
      std::push_heap(rows.begin(), rows.end(), later);
    } else if (later(row, rows.front())) {
      std::pop_heap(rows.begin(), rows.end(), later);
      rows.back() = row;
      std::push_heap(rows.begin(), rows.end(), later);
    }
  }

  void Summarize() {
    const uint32_t n = nops_ + ncalls_ + nsyncs_;
    if (n == 0) return;
    const int64_t pb = pred_begin_;
    r_->recorded_ns = rec_end_ - rec_begin_;
    r_->predicted_ns = uint64_t(std::max<int64_t>(0, pred_end_ - pb));
    r_->predicted_begin = pb;
    for (EmulatedStream& s : r_->streams) s.first_start -= pb, s.last_end -= pb;
    std::sort(r_->streams.begin(), r_->streams.end(), [](const auto& a, const auto& b) {
      return std::tie(a.pid, a.device, a.stream) < std::tie(b.pid, b.device, b.stream);
    });
    std::sort(r_->schedule.begin(), r_->schedule.end(), [](const auto& a, const auto& b) {
      return std::tie(a.start, a.op) < std::tie(b.start, b.op);
    });
  }

  void PrepareSweep() {
    lane_slot_.assign(t_.lanes().size(), kNone);
    if (o_.op_times) r_->op_start.assign(nops_, 0), r_->op_end.assign(nops_, 0);
  }

  uint64_t launch_floor_ = 0;
  uint64_t rec_begin_ = UINT64_MAX, rec_end_ = 0;
  int64_t pred_begin_ = std::numeric_limits<int64_t>::max();
  int64_t pred_end_ = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kNoBase = std::numeric_limits<int64_t>::min();
  // Per half-node: evaluated, and reads still to come (4 bits in all: a byte per node).
  // Predicted times live only in live_ while read.
  HalfNodes nodes_;
  size_t visited_ = 0;
  LiveTimes live_;
  // Half-nodes waiting for predecessors (equal times, --streams, cycles).
  std::unordered_map<uint32_t, std::vector<uint32_t>> waiters_;  // predecessor -> waiters
  std::unordered_map<uint32_t, uint32_t> waiting_;   // waiter -> predecessors not evaluated
  std::unordered_map<uint32_t, int64_t> early_end_;  // op -> end forced before its start
  std::vector<uint32_t> lane_slot_;                  // GPU lane -> index in the result's streams
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> stream_index_;
  std::vector<InEdge> in_;
  std::vector<Edge> edges_;
};

}  // namespace

StatusOr<EmulationResult> EmulateSchedule(const CompactTrace& trace,
                                          const EmulationOptions& options) {
  EmulationResult result;
  Scheduler s(trace, options, &result);
  RETURN_IF_ERROR(s.Run());
  return result;
}

}  // namespace tracesmith::replay
