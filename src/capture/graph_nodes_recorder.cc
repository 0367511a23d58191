// GraphNodesRecorder: where each CUDA graph node came from (model::GraphNode
// rows), so that a kernel replayed from a graph is named by the line that put
// it in the graph — the model line behind a kernel of torch.compile's
// mode="reduce-overhead" (issue #41 item 1), a program's own line inside
// `with torch.cuda.graph(g):` — not by the line that replays the graph.
//
// A node is made by a call of the program (a launch into a capturing stream,
// cudaGraphAdd*Node: GRAPHNODE_CREATED, with the host stack of that call) or
// cloned from another (cudaGraphInstantiate makes each node of the executable
// graph, whose ids the kernel records carry, as a clone of the graph's node;
// cudaGraphClone: GRAPHNODE_CLONED). The rows record both; the analysis
// follows clones back to the node a call made (CompactTrace::StackOfOp).
//
// cudaGraphInstantiate's own CREATED callbacks (the executable graph's nodes,
// each followed by its CLONED) are recognised by the call (claimed, untimed)
// and get no stack walk (CUPTI's GRAPHEXEC_CREATE_STARTING / _CREATED did
// not bracket them: H200, CUDA 13.0, 2026-11-30, six made rows for three
// captured launches, three with cudaGraphInstantiate's stack).
// Threads: OnGraphNode runs on the application thread inside the call that
// makes the node (graph building is rare next to launches: a short lock);
// the writer appends the rows at each flush, before the flush's CUPTI
// records, so a node's row precedes the kernels run from it.
// Only with host stacks on: without a stack there is nothing to name.
#include <cupti.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "tracesmith/capture/recorder.h"
#include "tracesmith/model/records.h"

namespace tracesmith::capture {
namespace {

// Calls of cudaGraphInstantiate the thread is inside (nested: 0 or 1), counted
// for the capture `generation` names: a capture that ended inside one (its
// exit never seen) leaves nothing to the next capture of the process.
struct Instantiating {
  uint64_t generation = 0;
  int depth = 0;
};
thread_local Instantiating t_instantiating;
std::atomic<uint64_t> g_generation{0};

int& InstantiateDepth(uint64_t generation) {
  if (t_instantiating.generation != generation) t_instantiating = {generation, 0};
  return t_instantiating.depth;
}

class GraphNodesRecorder final : public Recorder {
 public:
  explicit GraphNodesRecorder(uint32_t pid) : pid_(pid), generation_(++g_generation) {}
  const char* name() const override { return "graph nodes"; }

  void Claim(CallbackClaims& claims) override {
    if (!claims.stacks_on()) return;
    claims.GraphNodes();
    // cudaGraphInstantiate makes the executable graph's nodes (CREATED, then
    // CLONED from the graph's node, on the same thread): told apart by the
    // call they happen in, no stack is walked for them.
    for (CUpti_CallbackId cbid :
         {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
          CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
          CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
          CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz})
      claims.Driver(cbid, DriverClaim{.timed = false, .stack = false, .entry = true, .exit = true});
    claimed_ = true;
  }

  void OnDriverCall(const DriverCallEvent& call) override {
    int& depth = InstantiateDepth(generation_);
    depth += call.entry ? 1 : (depth > 0 ? -1 : 0);
  }

  void OnGraphNode(const GraphNodeEvent& e) override {
    model::GraphNode row;
    row.pid = pid_;
    if (cuptiGetGraphNodeId(e.data->node, &row.graph_node_id) != CUPTI_SUCCESS) return;
    if (e.cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
      if (!e.data->originalNode ||
          cuptiGetGraphNodeId(e.data->originalNode, &row.origin_node_id) != CUPTI_SUCCESS)
        return;
    } else if (InstantiateDepth(generation_) || !(row.stack_id = e.TakeStack())) {
      return;  // the executable graph's copy (its CLONED row follows), or no stack
    }
    std::lock_guard<std::mutex> lock(mu_);
    (row.origin_node_id ? cloned_ : made_)++;
    rows_.push_back(row);
  }

  // Writer: the rows made so far (their stacks are drained after Collect).
  void Collect() override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.insert(pending_.end(), rows_.begin(), rows_.end());
    rows_.clear();
  }
  void Write(format::SbtWriter& sbt, bool /*final*/) override {
    for (const model::GraphNode& r : pending_) sbt.Append(r);
    pending_.clear();
  }

  void WriteStats(StatSink& stats) override {
    if (!claimed_) return;
    std::lock_guard<std::mutex> lock(mu_);
    stats.Add("capture.graph_nodes.made", made_);
    stats.Add("capture.graph_nodes.cloned", cloned_);
  }

 private:
  const uint32_t pid_;
  const uint64_t generation_;
  bool claimed_ = false;
  std::mutex mu_;
  std::vector<model::GraphNode> rows_;     // made by the callbacks (mu_)
  std::vector<model::GraphNode> pending_;  // collected, written at the next Write (writer)
  uint64_t made_ = 0, cloned_ = 0;
};

}  // namespace

std::unique_ptr<Recorder> MakeGraphNodesRecorder(const RecorderContext& context) {
  if (!context.subscribed) return nullptr;
  return std::make_unique<GraphNodesRecorder>(context.pid);
}

}  // namespace tracesmith::capture
