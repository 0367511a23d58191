// The schedule emulator as it was before it stopped materialising the graph
// (commit bf9a0cb): the whole half-node graph in CSR form, evaluated by
// Kahn's algorithm. Kept only as the reference of the differential test
// (emulator_differential_test.cc): the streaming emulator must give the same
// result on every trace and option set.
#include "replay/emulator_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <unordered_map>

#include "replay/schedule_inputs.h"
#include "tracesmith/analysis/dependency_graph.h"
#include "tracesmith/base/statistics.h"

namespace tracesmith::replay::testing {

using analysis::CompactTrace;
using analysis::DependencyRules;
using analysis::Edge;
using analysis::EdgeKind;
using analysis::GpuOp;
using analysis::kNone;
using analysis::NodeKind;
using analysis::NodeRef;
using analysis::OpKind;
using internal::FromStart;
using internal::IsStartEdge;

namespace {

class Scheduler : internal::ScheduleInputs {
 public:
  using ScheduleInputs::ScheduleInputs;

  Status Run() {
    RETURN_IF_ERROR(PrepareScales());
    PrepareSyncCalls();
    PrepareVirtualStreams();
    ComputeLaunchFloor();
    BuildGraph();
    Schedule();
    Summarize();
    return OkStatus();
  }

 private:
  // Median latency (op start - call start) of launches that were not queued
  // behind other work: the least delay a launch edge keeps when it is not binding.
  void ComputeLaunchFloor() {
    std::vector<uint64_t> gaps;
    std::vector<Edge> edges;
    for (uint32_t i = 0; i < nops_; ++i) {
      StartEdges(i, &edges);
      const uint64_t s = t_.ops()[i].start_ns;
      const Edge* b = BindingStart(edges, s);
      if (b && FromStart(b->kind)) gaps.push_back(s - rules_.Start(b->from));
    }
    if (gaps.empty()) return;
    launch_floor_ = Median(std::move(gaps));
    r_->launch_floor_ns = launch_floor_;
  }

  // Half-nodes: 2*id is node id's start, 2*id+1 its end. Each has in-edges
  // (predecessor half-node + delay) and a base time (roots keep their
  // recorded start); its time is max(base, max(pred + delay)). Delays depend
  // on recorded times only, so the graph is built once and then evaluated
  // in topological order.
  void AddEdge(uint32_t from_half, int64_t delay) { in_.push_back({from_half, delay}); }
  static uint32_t Half(uint32_t id, bool end) { return 2 * id + (end ? 1 : 0); }

  void BuildGraph() {
    const uint32_t n = nops_ + ncalls_ + nsyncs_;
    root_.assign(size_t(n), false);
    in_begin_.assign(size_t(n) * 2 + 1, 0);
    in_.reserve(size_t(n) * 4);
    for (uint32_t id = 0; id < n; ++id) {
      BuildStart(id);
      in_begin_[2 * id + 1] = uint32_t(in_.size());
      BuildEnd(id);
      in_begin_[2 * id + 2] = uint32_t(in_.size());
    }
  }

  void BuildStart(uint32_t id) {
    NodeRef n = Ref(id);
    const uint64_t rec = rules_.Start(n);
    StartEdges(id, &edges_);
    const Edge* bind = BindingStart(edges_, rec);
    if (!bind) {  // a root (first call on a thread, ...) keeps its recorded time
      root_[id] = true;
      r_->contradicting_edges += edges_.size();
      return;
    }
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
          r_->contradicting_edges++;
          continue;
        }
      }
      AddEdge(Half(Id(e.from), !fs), d);
    }
  }

  void BuildEnd(uint32_t id) {
    NodeRef n = Ref(id);
    const uint64_t rs = rules_.Start(n), re = rules_.End(n);
    if (n.kind == NodeKind::kOp) {
      const double dur = double(re - rs) * Scale(n.index);
      AddEdge(Half(id, false), int64_t(std::llround(dur)));
      return;
    }
    if (RemovedSync(n)) {  // the wait disappears: no duration, no predecessors
      AddEdge(Half(id, false), 0);
      r_->syncs_removed++;
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
    AddEdge(Half(id, false), bind ? 0 : int64_t(re - rs));
    for (const Edge& e : scratch_) {
      if (IsStartEdge(e.kind)) continue;
      if (rules_.End(e.from) > re) {  // e.g. cudaStreamWaitEvent returns before its wait ends
        r_->contradicting_edges++;
        continue;
      }
      AddEdge(Half(Id(e.from), true), &e == bind ? int64_t(re - best) : 0);
    }
  }

  uint64_t RecordedTime(uint32_t half) const {
    NodeRef r = Ref(half / 2);
    return half & 1 ? rules_.End(r) : rules_.Start(r);
  }

  // Kahn's algorithm over the half-nodes. What-if edges (--streams) can in
  // rare cases close a cycle; then the earliest recorded half-node of what
  // is left is forced with the predecessors already scheduled (counted).
  void Schedule() {
    const uint32_t h = uint32_t(in_begin_.size() - 1);
    std::vector<uint32_t> indeg(h), out_begin(size_t(h) + 1, 0), out;
    for (uint32_t x = 0; x < h; ++x) {
      indeg[x] = in_begin_[x + 1] - in_begin_[x];
      for (uint32_t k = in_begin_[x]; k < in_begin_[x + 1]; ++k) out_begin[in_[k].from + 1]++;
    }
    for (uint32_t x = 0; x < h; ++x) out_begin[x + 1] += out_begin[x];
    out.resize(in_.size());
    {
      std::vector<uint32_t> fill(out_begin.begin(), out_begin.end() - 1);
      for (uint32_t x = 0; x < h; ++x)
        for (uint32_t k = in_begin_[x]; k < in_begin_[x + 1]; ++k) out[fill[in_[k].from]++] = x;
    }
    val_.assign(h, 0);
    std::vector<uint8_t> done(h, 0);
    std::vector<uint32_t> ready;
    for (uint32_t x = 0; x < h; ++x)
      if (indeg[x] == 0) ready.push_back(x);
    uint32_t scheduled = 0;
    auto evaluate = [&](uint32_t x) {
      int64_t v = !(x & 1) && root_[x / 2] ? int64_t(RecordedTime(x)) : kNoBase;
      for (uint32_t k = in_begin_[x]; k < in_begin_[x + 1]; ++k) {
        if (!done[in_[k].from]) {
          r_->out_of_order_refs++;
          continue;
        }
        v = std::max(v, val_[in_[k].from] + in_[k].delay);
      }
      if (v == kNoBase) v = int64_t(RecordedTime(x));
      val_[x] = v;
      done[x] = 1;
      scheduled++;
    };
    auto drain = [&] {
      while (!ready.empty()) {
        uint32_t x = ready.back();
        ready.pop_back();
        if (done[x]) continue;
        evaluate(x);
        for (uint32_t k = out_begin[x]; k < out_begin[x + 1]; ++k)
          if (--indeg[out[k]] == 0) ready.push_back(out[k]);
      }
    };
    drain();
    if (scheduled < h) {
      std::vector<uint32_t> left;
      for (uint32_t x = 0; x < h; ++x)
        if (!done[x]) left.push_back(x);
      std::stable_sort(left.begin(), left.end(),
                       [&](uint32_t a, uint32_t b) { return RecordedTime(a) < RecordedTime(b); });
      for (uint32_t x : left) {
        if (done[x]) continue;
        indeg[x] = 0;
        ready.push_back(x);
        drain();
      }
    }
    std::vector<InEdge>().swap(in_);  // the graph is not needed any more
    std::vector<uint32_t>().swap(in_begin_);
  }
  int64_t StartOf(uint32_t id) const { return val_[2 * size_t(id)]; }
  int64_t EndOf(uint32_t id) const { return val_[2 * size_t(id) + 1]; }

  void Summarize() {
    const uint32_t n = nops_ + ncalls_ + nsyncs_;
    if (n == 0) return;
    uint64_t rb = UINT64_MAX, rend = 0;
    int64_t pb = std::numeric_limits<int64_t>::max(), pend = std::numeric_limits<int64_t>::min();
    for (uint32_t i = 0; i < n; ++i) {
      NodeRef ref = Ref(i);
      rb = std::min(rb, rules_.Start(ref));
      rend = std::max(rend, rules_.End(ref));
      pb = std::min(pb, StartOf(i));
      pend = std::max(pend, EndOf(i));
    }
    r_->recorded_ns = rend - rb;
    r_->predicted_ns = uint64_t(std::max<int64_t>(0, pend - pb));
    r_->predicted_begin = pb;
    r_->op_start.resize(nops_);
    r_->op_end.resize(nops_);
    for (uint32_t i = 0; i < nops_; ++i) r_->op_start[i] = StartOf(i), r_->op_end[i] = EndOf(i);
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> index;
    for (uint32_t i = 0; i < nops_; ++i) {
      const GpuOp op = t_.ops()[i];
      const auto& lane = t_.lanes()[op.lane()];
      auto key = std::make_tuple(lane.pid, lane.device, lane_stream_[op.lane()]);
      auto [it, fresh] = index.try_emplace(key, r_->streams.size());
      if (fresh) {
        EmulatedStream s;
        s.pid = lane.pid;
        s.device = lane.device;
        s.stream = lane_stream_[op.lane()];
        s.first_start = StartOf(i) - pb;
        s.last_end = EndOf(i) - pb;
        r_->streams.push_back(s);
      }
      EmulatedStream& s = r_->streams[it->second];
      s.ops++;
      s.busy_ns += uint64_t(EndOf(i) - StartOf(i));
      s.recorded_busy_ns += op.duration();
      s.first_start = std::min(s.first_start, StartOf(i) - pb);
      s.last_end = std::max(s.last_end, EndOf(i) - pb);
    }
    std::sort(r_->streams.begin(), r_->streams.end(), [](const auto& a, const auto& b) {
      return std::tie(a.pid, a.device, a.stream) < std::tie(b.pid, b.device, b.stream);
    });
  }

  uint64_t launch_floor_ = 0;
  static constexpr int64_t kNoBase = std::numeric_limits<int64_t>::min();
  // 12 bytes, not 16: edges are the bulk of the graph (~2.5 per node).
  struct __attribute__((packed)) InEdge {
    uint32_t from;  // half-node
    int64_t delay;
  };
  static_assert(sizeof(InEdge) == 12);
  std::vector<bool> root_;  // nodes that keep their recorded start (no binding start edge)
  std::vector<int64_t> val_;
  std::vector<uint32_t> in_begin_;  // CSR offsets of in_ per half-node
  std::vector<InEdge> in_;
  std::vector<Edge> edges_;
};

}  // namespace

StatusOr<EmulationResult> EmulateScheduleWithGraph(const CompactTrace& trace,
                                                   const EmulationOptions& options) {
  EmulationResult result;
  Scheduler s(trace, options, &result);
  RETURN_IF_ERROR(s.Run());
  return result;
}

}  // namespace tracesmith::replay::testing
