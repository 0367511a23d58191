#include "tracesmith/analysis/graph_kernels.h"

namespace tracesmith::analysis {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

uint32_t GraphKernels::Intern(uint32_t pid, uint32_t graph_id, uint64_t node_id) {
  if (!graph_id) return 0;
  const uint64_t key = Mix(Mix(Mix(0, pid), graph_id), node_id);
  // Collisions of the 64-bit key are told apart by a linear walk of the
  // nodes stored under it (nodes of one trace are few: thousands).
  auto [it, fresh] = index_.try_emplace(key, uint32_t(nodes_.size()));
  if (!fresh) {
    for (uint32_t i = it->second; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      if (n.pid == pid && n.graph_id == graph_id && n.node_id == node_id) return i;
    }
  }
  nodes_.push_back(Node{pid, graph_id, node_id, 0});
  return uint32_t(nodes_.size() - 1);
}

size_t GraphKernels::Resolve(const model::Trace& meta) {
  const auto& rows = meta.Rows<model::GraphNode>();
  if (rows.empty() || nodes_.size() == 1) return 0;
  struct Origin {
    uint64_t from = 0;   // cloned from this node (0: made by a call)
    uint32_t stack = 0;  // made by a call with this stack
  };
  // (pid, node) -> origin; a clone's row wins over a made row of the same id.
  std::unordered_map<uint64_t, std::vector<std::pair<uint32_t, Origin>>> by_node;
  auto find = [&](uint32_t pid, uint64_t node) -> Origin* {
    auto it = by_node.find(node);
    if (it == by_node.end()) return nullptr;
    for (auto& [p, o] : it->second)
      if (p == pid) return &o;
    return nullptr;
  };
  for (const model::GraphNode& r : rows) {
    Origin* o = find(r.pid, r.graph_node_id);
    if (!o) o = &by_node[r.graph_node_id].emplace_back(r.pid, Origin{}).second;
    if (r.origin_node_id)
      o->from = r.origin_node_id;
    else if (!o->from)
      o->stack = r.stack_id;
  }
  size_t named = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    uint64_t node = n.node_id;
    for (int step = 0; step < 64; ++step) {
      const Origin* o = find(n.pid, node);
      if (!o) break;
      if (!o->from) {
        n.stack_id = o->stack;
        break;
      }
      node = o->from;
    }
    named += n.stack_id != 0;
  }
  return named;
}

}  // namespace tracesmith::analysis
