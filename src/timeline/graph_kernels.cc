#include "tracesmith/timeline/graph_kernels.h"

namespace tracesmith::analysis {

uint32_t GraphKernels::Intern(uint32_t pid, uint32_t graph_id, uint64_t node_id) {
  if (!graph_id) return 0;
  auto [it, fresh] =
      index_[uint64_t(pid) << 32 | graph_id].try_emplace(node_id, uint32_t(nodes_.size()));
  if (fresh) nodes_.push_back(Node{pid, graph_id, node_id, 0});
  return it->second;
}

size_t GraphKernels::Resolve(const model::Trace& meta) {
  const auto& rows = meta.Rows<model::GraphNode>();
  if (rows.empty() || nodes_.size() == 1) return 0;
  struct Origin {
    uint64_t from = 0;   // cloned from this node (0: made by a call)
    uint32_t stack = 0;  // made by a call with this stack
  };
  // (pid, node) -> origin; a clone's row wins over a made row of the same id.
  std::unordered_map<uint32_t, std::unordered_map<uint64_t, Origin>> by_pid;
  for (const model::GraphNode& r : rows) {
    Origin& o = by_pid[r.pid][r.graph_node_id];
    if (r.origin_node_id)
      o.from = r.origin_node_id;
    else if (!o.from)
      o.stack = r.stack_id;
  }
  size_t named = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    const auto pid = by_pid.find(n.pid);
    if (pid == by_pid.end()) continue;
    uint64_t node = n.node_id;
    for (int step = 0; step < 64; ++step) {
      const auto o = pid->second.find(node);
      if (o == pid->second.end()) break;
      if (!o->second.from) {
        n.stack_id = o->second.stack;
        break;
      }
      node = o->second.from;
    }
    named += n.stack_id != 0;
  }
  return named;
}

}  // namespace tracesmith::analysis
