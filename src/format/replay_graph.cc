// CUDA graph launches in replay payloads (0x46): node kinds, the bytes a
// memset/memcpy node touches, dependency closure and topological order
// (capture orders the nodes with TopologicalOrder; node replay runs a node's
// GraphAncestors first).
#include <algorithm>
#include <queue>

#include "tracesmith/format/replay_payload.h"

namespace tracesmith::format {

const char* GraphNodeKindName(GraphNodeKind kind) {
  switch (kind) {
    case GraphNodeKind::kKernel:
      return "kernel";
    case GraphNodeKind::kMemset:
      return "memset";
    case GraphNodeKind::kMemcpy:
      return "memcpy";
    case GraphNodeKind::kEmpty:
      return "empty";
  }
  return "unknown";
}

namespace {
// From the first byte of row 0 to the last byte of the last row; a size of
// UINT64_MAX when that does not fit 64 bits (a reader refuses it).
DeviceSpan RowsSpan(uint64_t address, uint64_t pitch, uint64_t row_bytes, uint64_t height) {
  if (row_bytes == 0 || height == 0) return {address, 0};
  unsigned __int128 size = (unsigned __int128)pitch * (height - 1) + row_bytes;
  if (height == 1) size = row_bytes;
  if (size > UINT64_MAX) return {address, UINT64_MAX};
  return {address, uint64_t(size)};
}
}  // namespace

DeviceSpan GraphNodeRecord::Written() const {
  if (kind == GraphNodeKind::kMemset)
    return RowsSpan(dst, dst_pitch, uint64_t(element_size) * width, height);
  if (kind == GraphNodeKind::kMemcpy) return RowsSpan(dst, dst_pitch, width, height);
  return {};
}

DeviceSpan GraphNodeRecord::Read() const {
  if (kind == GraphNodeKind::kMemcpy) return RowsSpan(src, src_pitch, width, height);
  return {};
}

std::string GraphLaunchRecord::DescribeNodes() const {
  size_t count[kMaxGraphNodeKind + 1] = {};
  for (const GraphNodeRecord& n : nodes)
    if (uint8_t(n.kind) <= kMaxGraphNodeKind) ++count[uint8_t(n.kind)];
  std::string out;
  for (GraphNodeKind k : {GraphNodeKind::kKernel, GraphNodeKind::kMemset, GraphNodeKind::kMemcpy,
                          GraphNodeKind::kEmpty}) {
    const size_t c = count[uint8_t(k)];
    if (c == 0) continue;
    if (!out.empty()) out += ", ";
    out += StrFormat("%zu %s%s", c, GraphNodeKindName(k),
                     c > 1 && k != GraphNodeKind::kEmpty ? "s" : "");
  }
  return out.empty() ? "no nodes" : out;
}

const GraphLaunchRecord* ReplayCapture::FindGraph(uint64_t index) const {
  auto it = std::lower_bound(graphs.begin(), graphs.end(), index,
                             [](const GraphLaunchRecord& g, uint64_t i) { return g.index < i; });
  return it != graphs.end() && it->index == index ? &*it : nullptr;
}

std::vector<uint32_t> GraphAncestors(const GraphLaunchRecord& graph, uint32_t node) {
  if (node >= graph.nodes.size()) return {};
  std::vector<bool> in(node, false);
  // Dependencies point to earlier nodes: one pass from `node` downwards.
  for (uint32_t d : graph.nodes[node].dependencies)
    if (d < node) in[d] = true;
  for (uint32_t k = node; k-- > 0;)
    if (in[k])
      for (uint32_t d : graph.nodes[k].dependencies)
        if (d < k) in[d] = true;
  std::vector<uint32_t> out;
  for (uint32_t k = 0; k < node; ++k)
    if (in[k]) out.push_back(k);
  return out;
}

GraphNodeSplit SplitForNodeReplay(const GraphLaunchRecord& graph, uint32_t node) {
  GraphNodeSplit s;
  s.before.assign(graph.nodes.size(), false);
  for (uint32_t a : GraphAncestors(graph, node)) s.before[a] = true;
  s.after.assign(graph.nodes.size(), false);
  for (size_t k = 0; k < graph.nodes.size(); ++k) s.after[k] = !s.before[k] && k != node;
  return s;
}

StatusOr<std::vector<uint32_t>> TopologicalOrder(
    uint32_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges) {
  std::vector<std::vector<uint32_t>> next(n);
  std::vector<uint32_t> pending(n, 0);
  for (const auto& [from, to] : edges) {
    if (from >= n || to >= n)
      return InvalidArgument(StrFormat("graph edge %u -> %u: only %u nodes", from, to, n));
    next[from].push_back(to);
    ++pending[to];
  }
  // Smallest ready index first: the order is deterministic and keeps the
  // driver's node order where the dependencies allow.
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t k = 0; k < n; ++k)
    if (pending[k] == 0) ready.push(k);
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const uint32_t k = ready.top();
    ready.pop();
    order.push_back(k);
    for (uint32_t t : next[k])
      if (--pending[t] == 0) ready.push(t);
  }
  if (order.size() != n)
    return FailedPrecondition(
        StrFormat("the graph has a cycle (%zu of %u nodes ordered)", order.size(), n));
  return order;
}

}  // namespace tracesmith::format
