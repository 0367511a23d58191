// Dependency graph and critical path.
//
// Nodes are GPU ops, API calls and synchronization records. Edges, each a
// reason a node could not start (or finish) earlier:
//   stream_order   previous op on the same GPU stream
//   launch         the API call that issued the op (correlation id)
//   graph_launch   same, for a kernel run by a CUDA graph launch
//   thread_order   previous API call on the same host thread
//   event_wait     cudaStreamWaitEvent on the op's stream -> the op
//   event_record   the op (on another stream) the wait was released by
//   sync           the op a synchronize call waited for -> the sync record
//   sync_return    the sync record -> the API call that blocked on it
//   blocking_call  an op -> the synchronous call that returned after it
//   cross_device   peer copy <- latest op on the source device
// CUPTI records which event a wait is for but not which stream recorded it,
// so event_record, sync and cross_device edges point at the latest op that
// finished before the waiter was released: an inference, named as such in
// the DOT output.
//
// The graph is never materialised for the whole trace: predecessors are
// computed on demand from the sorted CompactTrace, so the critical path of a
// 10M-event trace costs O(path length). The critical path is found backwards
// from the node that finishes last: each step follows the predecessor that
// finished last (the binding constraint). Its segments tile the window
// exactly: node time, plus the gaps between a predecessor's end and a
// node's start (launch delay, host gaps, stream gaps).
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

enum class NodeKind : uint8_t { kOp, kCall, kSync };
struct NodeRef {
  NodeKind kind = NodeKind::kOp;
  uint32_t index = 0;
  bool operator==(const NodeRef&) const = default;
};

enum class EdgeKind : uint8_t {
  kStreamOrder,
  kLaunch,
  kGraphLaunch,
  kThreadOrder,
  kEventWait,
  kEventRecord,
  kSync,
  kSyncReturn,
  kBlockingCall,
  kCrossDevice,
};
const char* EdgeKindName(EdgeKind k);

struct Edge {
  NodeRef from, to;
  EdgeKind kind;
};

class DependencyRules {
 public:
  explicit DependencyRules(const CompactTrace& trace);
  // Appends the edges into `node`.
  void Predecessors(NodeRef node, std::vector<Edge>* out) const;
  uint64_t Start(NodeRef n) const;
  uint64_t End(NodeRef n) const;
  std::string Label(NodeRef n) const;

 private:
  // Latest-ending op on `lanes` (skipping `except`) with end <= t, or kNone.
  uint32_t LatestOpEndingBy(std::span<const uint32_t> lanes, uint64_t t, uint32_t except) const;
  const CompactTrace& trace_;
  std::unordered_map<uint64_t, uint32_t> sync_by_corr_;               // (pid << 32 | corr)
  std::vector<std::vector<uint32_t>> waits_by_lane_;                  // stream-wait sync indexes
  std::unordered_map<uint32_t, std::vector<uint32_t>> pid_lanes_;     // GPU lanes per pid
  std::unordered_map<uint64_t, std::vector<uint32_t>> device_lanes_;  // (pid << 32 | device)
};

enum class PathCategory : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kHostApi,      // time inside CUDA API calls
  kSyncWait,     // synchronization records
  kLaunchDelay,  // API call issued -> op started
  kHostGap,      // between API calls on a thread (CPU work outside CUDA)
  kStreamGap,    // previous op on the stream ended -> op started
  kWaitGap,      // other gaps (after an event, sync or cross-device dependency)
  kUntraced,     // before the first node of the path / after the last end
};
inline constexpr int kNumPathCategories = 10;
const char* PathCategoryName(PathCategory c);

struct PathSegment {
  uint64_t start = 0, end = 0;
  PathCategory category;
  NodeRef node;  // the node (or, for gaps, the node after the gap)
};

struct CriticalPath {
  std::array<uint64_t, kNumPathCategories> ns{};  // sums to window length
  uint64_t nodes = 0;
  // Time on the path per (category, name id) for kernels and API calls.
  std::unordered_map<uint64_t, uint64_t> by_name;
  std::vector<PathSegment> segments;  // in time order; only when kept
  bool segments_truncated = false;
};

// `keep_segments`: store up to that many segments (the latest ones).
CriticalPath ComputeCriticalPath(const CompactTrace& trace, size_t keep_segments = 0);

struct DotOptions {
  uint64_t from = 0, to = UINT64_MAX;  // absolute ns
  size_t node_limit = 500;
  bool mark_critical_path = true;
};

// Graphviz of the nodes overlapping [from, to] (the earliest node_limit of
// them), one cluster per stream and host thread, critical path in red.
Status WriteDot(const CompactTrace& trace, const DotOptions& options, std::ostream& out);

}  // namespace tracesmith::analysis
