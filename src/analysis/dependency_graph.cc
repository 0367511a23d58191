#include "tracesmith/analysis/dependency_graph.h"

#include <algorithm>
#include <map>
#include <set>

#include "tracesmith/base/file_util.h"

namespace tracesmith::analysis {

const char* EdgeKindName(EdgeKind k) {
  switch (k) {
    case EdgeKind::kStreamOrder:
      return "stream_order";
    case EdgeKind::kLaunch:
      return "launch";
    case EdgeKind::kGraphLaunch:
      return "graph_launch";
    case EdgeKind::kThreadOrder:
      return "thread_order";
    case EdgeKind::kEventWait:
      return "event_wait";
    case EdgeKind::kEventRecord:
      return "event_record";
    case EdgeKind::kSync:
      return "sync";
    case EdgeKind::kSyncReturn:
      return "sync_return";
    case EdgeKind::kBlockingCall:
      return "blocking_call";
    case EdgeKind::kCrossDevice:
      return "cross_device";
  }
  return "?";
}

const char* PathCategoryName(PathCategory c) {
  switch (c) {
    case PathCategory::kKernel:
      return "kernel";
    case PathCategory::kMemcpy:
      return "memcpy";
    case PathCategory::kMemset:
      return "memset";
    case PathCategory::kHostApi:
      return "host_api";
    case PathCategory::kSyncWait:
      return "sync_wait";
    case PathCategory::kLaunchDelay:
      return "launch_delay";
    case PathCategory::kHostGap:
      return "host_gap";
    case PathCategory::kStreamGap:
      return "stream_gap";
    case PathCategory::kWaitGap:
      return "wait_gap";
    case PathCategory::kUntraced:
      return "untraced";
  }
  return "?";
}

namespace {
uint64_t PidKey(uint32_t pid, uint32_t v) { return uint64_t(pid) << 32 | v; }
// How far back LatestOpEndingBy looks on a stream: ops of one stream run in
// order, so the answer is almost always the first candidate.
constexpr int kLookBack = 64;
}  // namespace

DependencyRules::DependencyRules(const CompactTrace& trace)
    : trace_(trace), waits_by_lane_(trace.lanes().size()) {
  const auto& syncs = trace.syncs();
  for (uint32_t i = 0; i < syncs.size(); ++i) {
    if (syncs[i].correlation_id) sync_by_corr_[PidKey(syncs[i].pid, syncs[i].correlation_id)] = i;
    if (syncs[i].sync_type == model::kSyncStreamWaitEvent && syncs[i].lane != kNone)
      waits_by_lane_[syncs[i].lane].push_back(i);
  }
  for (uint32_t l : trace.gpu_lanes()) {
    const Lane& lane = trace.lanes()[l];
    pid_lanes_[lane.pid].push_back(l);
    device_lanes_[PidKey(lane.pid, lane.device)].push_back(l);
  }
}

uint64_t DependencyRules::Start(NodeRef n) const {
  switch (n.kind) {
    case NodeKind::kOp:
      return trace_.ops()[n.index].start_ns;
    case NodeKind::kCall:
      return trace_.calls()[n.index].start_ns;
    case NodeKind::kSync:
      return trace_.syncs()[n.index].start_ns;
  }
  return 0;
}

uint64_t DependencyRules::End(NodeRef n) const {
  switch (n.kind) {
    case NodeKind::kOp:
      return trace_.ops()[n.index].end_ns;
    case NodeKind::kCall:
      return trace_.calls()[n.index].end_ns;
    case NodeKind::kSync:
      return trace_.syncs()[n.index].end_ns;
  }
  return 0;
}

std::string DependencyRules::Label(NodeRef n) const {
  switch (n.kind) {
    case NodeKind::kOp: {
      const GpuOp o = trace_.ops()[n.index];
      if (o.kind() == OpKind::kKernel) return std::string(trace_.String(o.name_id));
      const CopyInfo& c = trace_.copies()[o.extra];
      if (c.is_memset) return "Memset " + HumanBytes(c.bytes);
      return std::string("Memcpy ") + model::CopyKindName(c.copy_kind) + " " + HumanBytes(c.bytes);
    }
    case NodeKind::kCall:
      return std::string(trace_.String(trace_.calls()[n.index].name_id));
    case NodeKind::kSync:
      return std::string("Sync ") + model::SyncTypeName(trace_.syncs()[n.index].sync_type);
  }
  return "";
}

uint32_t DependencyRules::LatestOpEndingBy(std::span<const uint32_t> lanes, uint64_t t,
                                           uint32_t except) const {
  const auto ops = trace_.ops();
  uint32_t best = kNone;
  for (uint32_t l : lanes) {
    LaneRange r = trace_.lane_range(l);
    // Ops starting at or before t; the one ending last at or before t.
    auto it = std::upper_bound(ops.begin() + r.begin, ops.begin() + r.end, t,
                               [](uint64_t x, const GpuOp& o) { return x < o.start_ns; });
    uint32_t i = static_cast<uint32_t>(it - ops.begin());
    for (int k = 0; k < kLookBack && i > r.begin; ++k) {
      --i;
      if (i == except || ops[i].end_ns > t) continue;
      if (best == kNone || ops[i].end_ns > ops[best].end_ns) best = i;
      break;
    }
  }
  return best;
}

void DependencyRules::Predecessors(NodeRef node, std::vector<Edge>* out) const {
  const auto ops = trace_.ops();
  const auto calls = trace_.calls();
  const auto& syncs = trace_.syncs();
  auto add = [&](NodeKind k, uint32_t i, EdgeKind e) {
    if (i != kNone) out->push_back(Edge{{k, i}, node, e});
  };
  switch (node.kind) {
    case NodeKind::kOp: {
      const GpuOp& o = ops[node.index];
      LaneRange r = trace_.lane_range(o.lane());
      if (node.index > r.begin) add(NodeKind::kOp, node.index - 1, EdgeKind::kStreamOrder);
      add(NodeKind::kCall, trace_.CallOfOp(node.index),
          trace_.GraphOfOp(o) ? EdgeKind::kGraphLaunch : EdgeKind::kLaunch);
      // The latest stream wait that ended after the previous op and by this op's start.
      const uint64_t prev_end = node.index > r.begin ? ops[node.index - 1].end_ns : 0;
      const auto& waits = waits_by_lane_[o.lane()];
      for (auto it = waits.rbegin(); it != waits.rend(); ++it) {
        const SyncRecord& w = syncs[*it];
        if (w.end_ns <= o.start_ns && w.end_ns >= prev_end) {
          add(NodeKind::kSync, *it, EdgeKind::kEventWait);
          break;
        }
        if (w.end_ns < prev_end) break;
      }
      if (o.kind() == OpKind::kMemcpy) {
        const CopyInfo& c = trace_.copies()[o.extra];
        if (c.copy_kind == model::kCopyPtoP || c.src_device != c.dst_device) {
          auto it = device_lanes_.find(PidKey(trace_.PidOfLane(o.lane()), c.src_device));
          if (it != device_lanes_.end() && c.src_device != trace_.lanes()[o.lane()].device)
            add(NodeKind::kOp, LatestOpEndingBy(it->second, o.start_ns, node.index),
                EdgeKind::kCrossDevice);
        }
      }
      break;
    }
    case NodeKind::kCall: {
      const HostCall& c = calls[node.index];
      LaneRange r = trace_.lane_range(c.lane);
      if (node.index > r.begin) add(NodeKind::kCall, node.index - 1, EdgeKind::kThreadOrder);
      const uint32_t pid = trace_.PidOfLane(c.lane);
      auto s = sync_by_corr_.find(PidKey(pid, c.correlation_id));
      if (c.correlation_id && s != sync_by_corr_.end())
        add(NodeKind::kSync, s->second, EdgeKind::kSyncReturn);
      uint32_t op = trace_.OpOfCall(node.index);
      if (op != kNone && ops[op].end_ns <= c.end_ns && ops[op].end_ns >= c.start_ns)
        add(NodeKind::kOp, op, EdgeKind::kBlockingCall);
      break;
    }
    case NodeKind::kSync: {
      const SyncRecord& s = syncs[node.index];
      if (s.sync_type == model::kSyncStreamWaitEvent) {
        auto it = pid_lanes_.find(s.pid);
        if (it == pid_lanes_.end()) break;
        std::vector<uint32_t> others;
        for (uint32_t l : it->second)
          if (l != s.lane) others.push_back(l);
        add(NodeKind::kOp, LatestOpEndingBy(others, s.end_ns, kNone), EdgeKind::kEventRecord);
      } else if (s.sync_type == model::kSyncStreamSynchronize && s.lane != kNone) {
        const uint32_t one[] = {s.lane};
        add(NodeKind::kOp, LatestOpEndingBy(one, s.end_ns, kNone), EdgeKind::kSync);
      } else {
        auto it = device_lanes_.find(PidKey(s.pid, s.device_id));
        if (it != device_lanes_.end())
          add(NodeKind::kOp, LatestOpEndingBy(it->second, s.end_ns, kNone), EdgeKind::kSync);
      }
      break;
    }
  }
}

// ---- critical path -----------------------------------------------------------

namespace {

PathCategory NodeCategory(const CompactTrace& t, NodeRef n) {
  switch (n.kind) {
    case NodeKind::kOp:
      switch (t.ops()[n.index].kind()) {
        case OpKind::kKernel:
          return PathCategory::kKernel;
        case OpKind::kMemcpy:
          return PathCategory::kMemcpy;
        case OpKind::kMemset:
          return PathCategory::kMemset;
      }
      break;
    case NodeKind::kCall:
      return PathCategory::kHostApi;
    case NodeKind::kSync:
      return PathCategory::kSyncWait;
  }
  return PathCategory::kUntraced;
}

PathCategory GapCategory(EdgeKind via) {
  switch (via) {
    case EdgeKind::kLaunch:
    case EdgeKind::kGraphLaunch:
      return PathCategory::kLaunchDelay;
    case EdgeKind::kThreadOrder:
      return PathCategory::kHostGap;
    case EdgeKind::kStreamOrder:
      return PathCategory::kStreamGap;
    default:
      return PathCategory::kWaitGap;
  }
}

}  // namespace

CriticalPath ComputeCriticalPath(const CompactTrace& trace, size_t keep_segments) {
  CriticalPath path;
  const uint64_t w0 = trace.window_begin(), w1 = trace.window_end();
  if (w1 <= w0) return path;
  DependencyRules rules(trace);
  // Start from the node that finishes last (ops first on ties: GPU work is
  // what a step waits for).
  NodeRef cur;
  uint64_t best = 0;
  bool found = false;
  auto consider = [&](NodeKind k, uint32_t i) {
    NodeRef n{k, i};
    uint64_t e = std::min(rules.End(n), w1);
    if (!found || e > best) best = e, cur = n, found = true;
  };
  for (uint32_t i = 0; i < trace.ops().size(); ++i) consider(NodeKind::kOp, i);
  for (uint32_t i = 0; i < trace.calls().size(); ++i) consider(NodeKind::kCall, i);
  for (uint32_t i = 0; i < trace.syncs().size(); ++i) consider(NodeKind::kSync, i);
  auto add = [&](uint64_t s, uint64_t e, PathCategory c, NodeRef n) {
    s = std::max(s, w0);
    if (e <= s) return;
    path.ns[int(c)] += e - s;
    if (c == PathCategory::kKernel || c == PathCategory::kHostApi) {
      uint32_t name =
          n.kind == NodeKind::kOp ? trace.ops()[n.index].name_id : trace.calls()[n.index].name_id;
      path.by_name[uint64_t(c) << 32 | name] += e - s;
    }
    if (path.segments.size() < keep_segments) {
      path.segments.push_back({s, e, c, n});
    } else if (keep_segments) {
      path.segments_truncated = true;
    }
  };
  if (!found) {
    add(w0, w1, PathCategory::kUntraced, {});
    return path;
  }
  add(best, w1, PathCategory::kUntraced, cur);
  uint64_t hi = best;
  std::vector<Edge> edges;
  // Each step moves hi back or to an earlier node; the cap is a safety net.
  const uint64_t max_steps = trace.ops().size() + trace.calls().size() + trace.syncs().size() + 1;
  while (hi > w0 && path.nodes <= max_steps) {
    path.nodes++;
    const uint64_t start = rules.Start(cur), end = rules.End(cur);
    edges.clear();
    rules.Predecessors(cur, &edges);
    // The binding predecessor: finished last, and strictly earlier in
    // (end, start) order so the walk always moves back in time. (A stream
    // synchronize's op may start after the call did, but ends first.)
    const Edge* bind = nullptr;
    uint64_t bind_end = 0;
    for (const Edge& e : edges) {
      uint64_t ps = rules.Start(e.from), pe = rules.End(e.from);
      // An op may start before the call that issued it returns: the call
      // binds up to the op's start.
      if (e.kind == EdgeKind::kLaunch || e.kind == EdgeKind::kGraphLaunch) pe = std::min(pe, start);
      // Never past the part of the path already explained (hi): with the
      // launch cap above, a synchronous call and its op would otherwise
      // point at each other.
      if (pe > end || pe > hi || (pe == end && ps >= start)) continue;
      if (!bind || pe > bind_end) bind = &e, bind_end = pe;
    }
    if (!bind) {
      add(std::min(start, hi), hi, NodeCategory(trace, cur), cur);
      add(w0, std::min(start, hi), PathCategory::kUntraced, cur);
      break;
    }
    const uint64_t seg_start = std::min(std::max(start, bind_end), hi);
    add(seg_start, hi, NodeCategory(trace, cur), cur);
    if (bind_end < seg_start) add(bind_end, seg_start, GapCategory(bind->kind), cur);
    hi = std::min(bind_end, seg_start);
    cur = bind->from;
  }
  std::reverse(path.segments.begin(), path.segments.end());
  return path;
}

// ---- DOT ---------------------------------------------------------------------

namespace {

std::string Escape(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  if (out.size() > 60) out = out.substr(0, 57) + "...";
  return out;
}

std::string NodeId(NodeRef n) {
  const char* p = n.kind == NodeKind::kOp ? "op" : n.kind == NodeKind::kCall ? "call" : "sync";
  return std::string(p) + std::to_string(n.index);
}

}  // namespace

Status WriteDot(const CompactTrace& trace, const DotOptions& o, std::ostream& out) {
  if (o.node_limit == 0) return InvalidArgument("DOT node limit must be at least 1");
  DependencyRules rules(trace);
  // The earliest nodes overlapping [from, to].
  std::vector<std::pair<uint64_t, NodeRef>> nodes;
  auto consider = [&](NodeKind k, uint32_t i) {
    NodeRef n{k, i};
    if (rules.End(n) >= o.from && rules.Start(n) <= o.to) nodes.push_back({rules.Start(n), n});
  };
  for (uint32_t i = 0; i < trace.ops().size(); ++i) consider(NodeKind::kOp, i);
  for (uint32_t i = 0; i < trace.calls().size(); ++i) consider(NodeKind::kCall, i);
  for (uint32_t i = 0; i < trace.syncs().size(); ++i) consider(NodeKind::kSync, i);
  const size_t total = nodes.size();
  auto by_start = [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.kind, a.second.index) <
           std::tie(b.first, b.second.kind, b.second.index);
  };
  if (nodes.size() > o.node_limit) {
    std::nth_element(nodes.begin(), nodes.begin() + o.node_limit, nodes.end(), by_start);
    nodes.resize(o.node_limit);
  }
  std::sort(nodes.begin(), nodes.end(), by_start);
  auto key = [](NodeRef n) { return uint64_t(n.kind) << 32 | n.index; };
  std::set<uint64_t> in_graph;
  for (auto& [t, n] : nodes) in_graph.insert(key(n));
  std::set<uint64_t> critical;
  if (o.mark_critical_path) {
    CriticalPath cp = ComputeCriticalPath(trace, 1u << 20);
    for (const PathSegment& s : cp.segments) critical.insert(key(s.node));
  }
  const uint64_t t0 = trace.trace_begin();
  out << "digraph tracesmith {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n";
  if (total > nodes.size())
    out << "  // " << nodes.size() << " of " << total
        << " nodes in range (raise the node limit or narrow the range)\n";
  // One cluster per lane.
  std::map<uint32_t, std::vector<NodeRef>> by_lane;
  std::vector<NodeRef> sync_nodes;
  for (auto& [t, n] : nodes) {
    if (n.kind == NodeKind::kOp)
      by_lane[trace.ops()[n.index].lane()].push_back(n);
    else if (n.kind == NodeKind::kCall)
      by_lane[trace.calls()[n.index].lane].push_back(n);
    else
      sync_nodes.push_back(n);
  }
  auto emit_node = [&](NodeRef n) {
    out << "    " << NodeId(n) << " [label=\"" << Escape(rules.Label(n)) << "\\n+"
        << HumanDuration(rules.Start(n) - std::min(t0, rules.Start(n))) << " ("
        << HumanDuration(rules.End(n) - rules.Start(n)) << ")\"";
    if (critical.count(key(n))) out << ", color=red, penwidth=2";
    out << "];\n";
  };
  for (auto& [lane, list] : by_lane) {
    const Lane& l = trace.lanes()[lane];
    out << "  subgraph cluster_" << lane << " {\n    label=\"";
    if (l.host)
      out << "pid " << l.pid << " thread " << l.tid;
    else
      out << "pid " << l.pid << " GPU " << l.device << " stream " << l.stream;
    out << "\";\n";
    for (NodeRef n : list) emit_node(n);
    out << "  }\n";
  }
  for (NodeRef n : sync_nodes) emit_node(n);
  std::vector<Edge> edges;
  for (auto& [t, n] : nodes) {
    edges.clear();
    rules.Predecessors(n, &edges);
    for (const Edge& e : edges) {
      if (!in_graph.count(key(e.from))) continue;
      out << "  " << NodeId(e.from) << " -> " << NodeId(e.to) << " [label=\""
          << EdgeKindName(e.kind) << "\"";
      if (e.kind == EdgeKind::kEventRecord || e.kind == EdgeKind::kSync ||
          e.kind == EdgeKind::kCrossDevice)
        out << ", style=dashed";  // inferred (see dependency_graph.h)
      if (critical.count(key(e.from)) && critical.count(key(e.to))) out << ", color=red";
      out << "];\n";
    }
  }
  out << "}\n";
  return out ? OkStatus() : IoError("writing DOT output failed");
}

}  // namespace tracesmith::analysis
