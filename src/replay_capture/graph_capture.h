// CUDA graphs in replay capture (#15 item 2): what a graph launch runs.
//
// cuGraphLaunch names an executable graph (CUgraphExec), whose nodes the
// driver does not let us read. So at every successful instantiation (and
// cuGraphExecUpdate) the source graph is cloned and kept by exec
// (GraphExecTable): PyTorch destroys the source CUgraph right after
// instantiating it. An exec whose node parameters are changed after
// instantiation (cuGraphExec*NodeSetParams) no longer matches its clone: its
// launches are not recorded. WalkGraph turns a clone into the nodes of a
// graph launch record: child graphs flattened, a topological order, and for
// each node its kind and parameters. Supported: kernel, memset, memcpy
// (device to device, 1-D or pitched), empty, and event record/wait (they
// order work inside the graph only: recorded as empty). Any other kind
// (host, memory alloc/free, conditional, external semaphores, batch memory
// ops, a memcpy touching host memory) makes the launch unrecordable; its
// name is returned.
#pragma once

#include <cuda.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracesmith/format/replay_payload.h"

namespace tracesmith::replay_capture {

// Set while replay capture's own CUDA calls run inside a callback: they
// must not be recorded again.
inline thread_local bool t_replay_busy = false;
struct ReplayBusyScope {
  ReplayBusyScope() { t_replay_busy = true; }
  ~ReplayBusyScope() { t_replay_busy = false; }
  ReplayBusyScope(const ReplayBusyScope&) = delete;
  ReplayBusyScope& operator=(const ReplayBusyScope&) = delete;
};

// Whether `stream` is capturing a CUDA graph (or cannot be asked: treated as
// capturing, so nothing else touches it). cuStreamIsCapturing is one of the
// calls the driver allows during a capture.
bool Capturing(CUstream stream);

// A CUkernel (the runtime's launches) resolved to its CUfunction in the
// current context; anything else unchanged.
CUfunction ResolveFunction(CUfunction f);
// The parameter layout (cuFuncGetParamInfo) and buffer of a launch of `f`
// with `params` (kernelParams) or `extra`; false when unreadable.
bool ReadKernelParams(CUfunction f, void** params, void** extra, format::LaunchRecord* l);

// Executable graph -> a clone of the graph it was instantiated from.
class GraphExecTable {
 public:
  GraphExecTable() = default;
  // Clones are not destroyed at exit: the driver may be shut down already.
  ~GraphExecTable() = default;
  GraphExecTable(const GraphExecTable&) = delete;
  GraphExecTable& operator=(const GraphExecTable&) = delete;
  GraphExecTable(GraphExecTable&&) = delete;
  GraphExecTable& operator=(GraphExecTable&&) = delete;

  // Instantiation or a successful cuGraphExecUpdate: (re)clones `source`.
  void Remember(CUgraphExec exec, CUgraph source);
  void Forget(CUgraphExec exec);  // cuGraphExecDestroy
  void MarkChanged(CUgraphExec exec);
  struct Entry {
    CUgraph clone = nullptr;  // null: not seen instantiated (or the clone failed)
    bool changed = false;     // node parameters set after instantiation
  };
  Entry Find(CUgraphExec exec);

 private:
  std::mutex mu_;
  std::unordered_map<CUgraphExec, Entry> map_;
};

// One node of a walked graph: its record and, for a kernel, its function
// (resolved; the module is found from it like for plain launches).
struct WalkedNode {
  format::GraphNodeRecord record;
  CUfunction function = nullptr;
};
struct WalkedGraph {
  std::vector<WalkedNode> nodes;  // topological order; dependencies index into it
  std::string unsupported;        // non-empty: a node kind replay lacks (nodes then incomplete)
  std::string error;              // non-empty: a driver call failed
};
WalkedGraph WalkGraph(CUgraph graph);

// The graph callbacks replay capture handles.
enum class GraphCall { kNone, kInstantiate, kUpdate, kSetParams, kDestroy, kLaunch };
GraphCall GraphCallOf(uint32_t cbid);

}  // namespace tracesmith::replay_capture
