// What both schedule evaluations read before scheduling: node ids over
// ops, calls and syncs, --scale-kernel factors per kernel name, each sync's
// API call, --streams' virtual stream order, and the start edges of a node.
// Shared by the streaming evaluation (emulator.cc) and the whole-graph
// reference the differential test compares it with
// (tests/replay/emulator_reference.cc), so that the two differ only in how
// they evaluate. Internal to the replay module.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "tracesmith/analysis/dependency_graph.h"
#include "tracesmith/base/pattern.h"
#include "tracesmith/replay/emulator.h"

namespace tracesmith::replay::internal {

inline uint64_t Key(uint32_t a, uint32_t b) { return uint64_t(a) << 32 | b; }

// Edges that bind a node's start (the rest bind its end).
inline bool IsStartEdge(analysis::EdgeKind k) {
  using analysis::EdgeKind;
  switch (k) {
    case EdgeKind::kStreamOrder:
    case EdgeKind::kLaunch:
    case EdgeKind::kGraphLaunch:
    case EdgeKind::kEventWait:
    case EdgeKind::kCrossDevice:
    case EdgeKind::kThreadOrder:
      return true;
    default:
      return false;
  }
}
// Edges measured from the predecessor's start (the rest from its end).
inline bool FromStart(analysis::EdgeKind k) {
  return k == analysis::EdgeKind::kLaunch || k == analysis::EdgeKind::kGraphLaunch;
}

class ScheduleInputs {
 public:
  ScheduleInputs(const analysis::CompactTrace& t, const EmulationOptions& o, EmulationResult* r)
      : t_(t), o_(o), r_(r), rules_(t) {
    nops_ = uint32_t(t.ops().size());
    ncalls_ = uint32_t(t.calls().size());
    nsyncs_ = uint32_t(t.syncs().size());
  }

 protected:
  using CompactTrace = analysis::CompactTrace;
  using DependencyRules = analysis::DependencyRules;
  using Edge = analysis::Edge;
  using EdgeKind = analysis::EdgeKind;
  using GpuOp = analysis::GpuOp;
  using NodeKind = analysis::NodeKind;
  using NodeRef = analysis::NodeRef;
  using OpKind = analysis::OpKind;
  static constexpr uint32_t kNone = analysis::kNone;

  NodeRef Ref(uint32_t id) const {
    if (id < nops_) return {NodeKind::kOp, id};
    if (id < nops_ + ncalls_) return {NodeKind::kCall, id - nops_};
    return {NodeKind::kSync, id - nops_ - ncalls_};
  }
  uint32_t Id(NodeRef r) const {
    return r.kind == NodeKind::kOp     ? r.index
           : r.kind == NodeKind::kCall ? nops_ + r.index
                                       : nops_ + ncalls_ + r.index;
  }

  Status PrepareScales() {
    if (o_.scale_kernels.empty()) return OkStatus();
    std::vector<Pattern> res;
    for (const KernelScale& k : o_.scale_kernels) {
      auto p = Pattern::Compile(k.pattern, /*optimize=*/false);
      if (!p.ok())
        return InvalidArgument("--scale-kernel '" + k.pattern +
                               "': bad regex: " + p.status().message());
      res.push_back(std::move(*p));
    }
    auto& by_name = scale_by_name_;  // regexes are slow: once per name
    for (uint32_t i = 0; i < nops_; ++i) {
      const GpuOp op = t_.ops()[i];
      if (op.kind() != OpKind::kKernel) continue;
      auto [it, fresh] = by_name.try_emplace(op.name_id, 1.0);
      if (fresh) {
        const std::string name(t_.String(op.name_id));
        for (size_t k = 0; k < res.size(); ++k) {
          if (res[k].Search(name)) {
            it->second = o_.scale_kernels[k].factor;
            break;
          }
        }
      }
      if (it->second != 1.0) r_->kernels_scaled++;
    }
    return OkStatus();
  }

  // A sync record starts with the API call of the same (pid, correlation id).
  // Only the ids of sync records are looked up (syncs are few, calls many):
  // the last call with each id wins.
  void PrepareSyncCalls() {
    std::unordered_map<uint64_t, uint32_t> call_by_corr;
    for (uint32_t i = 0; i < nsyncs_; ++i) {
      const auto& s = t_.syncs()[i];
      if (s.correlation_id) call_by_corr.emplace(Key(s.pid, s.correlation_id), kNone);
    }
    for (uint32_t i = 0; i < ncalls_ && !call_by_corr.empty(); ++i) {
      const auto c = t_.calls()[i];
      if (!c.correlation_id) continue;
      auto it = call_by_corr.find(Key(t_.PidOfLane(c.lane), c.correlation_id));
      if (it != call_by_corr.end()) it->second = i;
    }
    sync_call_.assign(nsyncs_, kNone);
    for (uint32_t i = 0; i < nsyncs_; ++i) {
      const auto& s = t_.syncs()[i];
      if (!s.correlation_id) continue;
      auto it = call_by_corr.find(Key(s.pid, s.correlation_id));
      if (it != call_by_corr.end()) sync_call_[i] = it->second;
    }
  }

  // --streams N: each (pid, device)'s lanes map round-robin onto N streams;
  // an op's stream predecessor is the previous op (by recorded start) there.
  void PrepareVirtualStreams() {
    lane_stream_.assign(t_.lanes().size(), 0);
    std::map<uint64_t, uint32_t> seen;  // (pid, device) -> lanes so far
    for (uint32_t l : t_.gpu_lanes()) {
      const auto& lane = t_.lanes()[l];
      uint32_t k = seen[Key(lane.pid, lane.device)]++;
      lane_stream_[l] = o_.streams ? k % o_.streams : lane.stream;
    }
    if (!o_.streams) return;
    std::map<std::pair<uint64_t, uint32_t>, std::vector<uint32_t>> members;
    for (uint32_t i = 0; i < nops_; ++i) {
      const auto& lane = t_.lanes()[t_.ops()[i].lane()];
      members[{Key(lane.pid, lane.device), lane_stream_[t_.ops()[i].lane()]}].push_back(i);
    }
    virtual_prev_.assign(nops_, kNone);
    for (auto& [key, ops] : members) {
      std::stable_sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t b) {
        return t_.ops()[a].start_ns < t_.ops()[b].start_ns;
      });
      for (size_t k = 1; k < ops.size(); ++k) virtual_prev_[ops[k]] = ops[k - 1];
    }
  }

  // Start edges of `id` (stream order replaced by the virtual stream's).
  void StartEdges(uint32_t id, std::vector<Edge>* out) {
    out->clear();
    NodeRef n = Ref(id);
    if (n.kind == NodeKind::kSync) {
      if (sync_call_[n.index] != kNone)
        out->push_back(Edge{{NodeKind::kCall, sync_call_[n.index]}, n, EdgeKind::kLaunch});
      return;
    }
    scratch_.clear();
    rules_.Predecessors(n, &scratch_);
    for (const Edge& e : scratch_) {
      if (!IsStartEdge(e.kind)) continue;
      if (o_.streams && e.kind == EdgeKind::kStreamOrder) continue;
      out->push_back(e);
    }
    if (o_.streams && n.kind == NodeKind::kOp && virtual_prev_[n.index] != kNone)
      out->push_back(Edge{{NodeKind::kOp, virtual_prev_[n.index]}, n, EdgeKind::kStreamOrder});
  }

  // The binding start edge: latest recorded reference not after the node's start.
  const Edge* BindingStart(const std::vector<Edge>& edges, uint64_t rec_start) const {
    const Edge* bind = nullptr;
    uint64_t best = 0;
    for (const Edge& e : edges) {
      uint64_t ref = FromStart(e.kind) ? rules_.Start(e.from) : rules_.End(e.from);
      if (ref > rec_start) continue;
      if (!bind || ref > best) bind = &e, best = ref;
    }
    return bind;
  }

  bool RemovedSync(NodeRef n) const {
    if (!o_.remove_sync || n.kind != NodeKind::kSync) return false;
    uint8_t type = t_.syncs()[n.index].sync_type;
    return type == model::kSyncStreamSynchronize || type == model::kSyncContextSynchronize;
  }

  // --scale-kernel factor of op `op` (1 for names without one).
  double Scale(uint32_t op) const {
    const GpuOp o = t_.ops()[op];
    if (scale_by_name_.empty() || o.kind() != OpKind::kKernel) return 1.0;
    auto it = scale_by_name_.find(o.name_id);
    return it == scale_by_name_.end() ? 1.0 : it->second;
  }

  const CompactTrace& t_;
  const EmulationOptions& o_;
  EmulationResult* r_;
  DependencyRules rules_;
  uint32_t nops_ = 0, ncalls_ = 0, nsyncs_ = 0;
  // --scale-kernel factor per kernel name id (names without one: 1), not per op.
  std::unordered_map<uint32_t, double> scale_by_name_;
  std::vector<uint32_t> sync_call_, virtual_prev_, lane_stream_;
  std::vector<Edge> scratch_;
};

}  // namespace tracesmith::replay::internal
