// The CUDA graph nodes that kernels of a trace ran from, and the host stack
// of the call that put each node in its graph (model::GraphNode rows, taken
// by the capture's graph-node recorder when host stacks are on).
//
// A kernel replayed from a graph carries its graph and its node in the
// executable graph (KernelEvent graph_id, graph_node_id). That node is a
// clone of the node the program made (cudaGraphInstantiate clones every
// node; cudaGraphClone clones again); the rows say which node
// each clone came from and with which stack a node was made. Resolve()
// follows each kernel's node back through its clones to the node a call
// made: its stack names the line that launched the kernel into a capturing
// stream (torch.compile's mode="reduce-overhead", `torch.cuda.graph`) or
// added the node — the code behind the kernel, where the graph launch's own
// stack names only the line that replays the graph. Not followed: an
// executable graph updated in place (cudaGraphExecUpdate, cudaGraphExec*
// SetParams: CUPTI's GRAPH_NODE_UPDATED / _SET_PARAMS, not recorded) keeps
// naming the line that first made each node.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

class GraphKernels {
 public:
  struct Node {
    uint32_t pid = 0, graph_id = 0;
    uint64_t node_id = 0;   // in the executable graph (KernelEvent graph_node_id)
    uint32_t stack_id = 0;  // after Resolve: the stack that made its origin (0: unknown)
  };
  GraphKernels() : nodes_(1) {}  // index 0: no graph
  // The index (>= 1) of a graph kernel's node, for GpuOp::extra; 0 when
  // graph_id is 0 (not run from a graph).
  uint32_t Intern(uint32_t pid, uint32_t graph_id, uint64_t node_id);
  // Fills each node's stack from the trace's GraphNode rows: clones followed
  // back to their origin (at most 64 steps; a cycle or a missing row: 0).
  // Returns how many nodes got a stack.
  size_t Resolve(const model::Trace& meta);
  const Node& operator[](uint32_t index) const { return nodes_[index]; }
  size_t size() const { return nodes_.size() - 1; }

 private:
  std::vector<Node> nodes_;
  // (pid << 32 | graph) -> node id -> index into nodes_
  std::unordered_map<uint64_t, std::unordered_map<uint64_t, uint32_t>> index_;
};

}  // namespace tracesmith::analysis
