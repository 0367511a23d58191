// Replay of a CUDA graph launch (payload chunk 0x46): the graph is rebuilt
// from its node records (cuGraphAdd*Node with the captured parameters and
// dependencies), instantiated once and launched per iteration on restored
// inputs; or one kernel node alone, on the inputs its ancestors rebuild
// (docs/replay-format.md, "Graph launches").
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "kernel_timer.h"
#include "measured_runs.h"
#include "replay_common.h"
#include "tracesmith/cuda/call.h"

namespace tracesmith::replay::gpu {
namespace {

// A graph built for replay and its executable, destroyed together.
class ReplayGraph {
 public:
  ReplayGraph() = default;
  ~ReplayGraph() {
    if (exec_) cuGraphExecDestroy(exec_);
    if (graph_) cuGraphDestroy(graph_);
  }
  ReplayGraph(const ReplayGraph&) = delete;
  ReplayGraph& operator=(const ReplayGraph&) = delete;
  ReplayGraph(ReplayGraph&&) = delete;
  ReplayGraph& operator=(ReplayGraph&&) = delete;

  // Adds the nodes of `g` whose `take[k]` is set (dependencies on nodes
  // left out are dropped: they ran before), then instantiates.
  Status Build(const format::GraphLaunchRecord& g, const std::vector<bool>& take,
               const std::vector<CUfunction>& functions,
               const std::vector<format::LaunchRecord>& patched_kernels,
               const Relocation& relocation) {
    CU_CALL(cuGraphCreate(&graph_, 0));
    CUcontext ctx = nullptr;
    CU_CALL(cuCtxGetCurrent(&ctx));
    std::vector<CUgraphNode> made(g.nodes.size(), nullptr);
    size_t added = 0;
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      if (!take[k]) continue;
      const format::GraphNodeRecord& n = g.nodes[k];
      std::vector<CUgraphNode> deps;
      for (uint32_t d : n.dependencies)
        if (d < k && made[d]) deps.push_back(made[d]);
      CUgraphNode node = nullptr;
      switch (n.kind) {
        case format::GraphNodeKind::kKernel:
          RETURN_IF_ERROR(AddKernel(patched_kernels[k], functions[k], deps, &node));
          break;
        case format::GraphNodeKind::kMemset: {
          CUDA_MEMSET_NODE_PARAMS p = {};
          p.dst = CUdeviceptr(relocation.Translate(n.dst));
          p.pitch = n.height > 1 ? n.dst_pitch : 0;
          p.value = n.value;
          p.elementSize = n.element_size;
          p.width = n.width;
          p.height = n.height;
          CU_CALL(cuGraphAddMemsetNode(&node, graph_, deps.data(), deps.size(), &p, ctx));
          break;
        }
        case format::GraphNodeKind::kMemcpy: {
          CUDA_MEMCPY3D p = {};
          p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
          p.srcDevice = CUdeviceptr(relocation.Translate(n.src));
          p.srcPitch = std::max(n.src_pitch, n.width);
          p.srcHeight = n.height;
          p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
          p.dstDevice = CUdeviceptr(relocation.Translate(n.dst));
          p.dstPitch = std::max(n.dst_pitch, n.width);
          p.dstHeight = n.height;
          p.WidthInBytes = n.width;
          p.Height = n.height;
          p.Depth = 1;
          CU_CALL(cuGraphAddMemcpyNode(&node, graph_, deps.data(), deps.size(), &p, ctx));
          break;
        }
        case format::GraphNodeKind::kEmpty:
          CU_CALL(cuGraphAddEmptyNode(&node, graph_, deps.data(), deps.size()));
          break;
      }
      made[k] = node;
      ++added;
    }
    if (added == 0) return OkStatus();  // nothing to run: Launch() does nothing
    CU_CALL(cuGraphInstantiate(&exec_, graph_, 0));
    return OkStatus();
  }
  Status Launch(CUstream stream) {
    if (exec_) CU_CALL(cuGraphLaunch(exec_, stream));
    return OkStatus();
  }

 private:
  // The captured parameter buffer is copied by the driver when the node is
  // added; KernelParams only has to live until then.
  Status AddKernel(const format::LaunchRecord& l, CUfunction f,
                   const std::vector<CUgraphNode>& deps, CUgraphNode* node) {
    KernelParams params(l);
    CUDA_KERNEL_NODE_PARAMS p = {};
    p.func = f;
    p.gridDimX = l.grid[0], p.gridDimY = l.grid[1], p.gridDimZ = l.grid[2];
    p.blockDimX = l.block[0], p.blockDimY = l.block[1], p.blockDimZ = l.block[2];
    p.sharedMemBytes = l.dynamic_shared_bytes;
    p.kernelParams = params.kernel_params();
    p.extra = params.extra();
    CU_CALL(cuGraphAddKernelNode(node, graph_, deps.data(), deps.size(), &p));
    for (const CUlaunchAttribute& a : LaunchAttributes(l))
      CU_CALL(cuGraphKernelNodeSetAttribute(*node, a.id, &a.value));
    return OkStatus();
  }

  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

// Device scratch copies of ranges (the state a node replay restarts from).
class SavedState {
 public:
  SavedState() = default;
  ~SavedState() {
    for (CUdeviceptr p : copies_)
      if (p) cuMemFree(p);
  }
  SavedState(const SavedState&) = delete;
  SavedState& operator=(const SavedState&) = delete;
  SavedState(SavedState&&) = delete;
  SavedState& operator=(SavedState&&) = delete;
  Status Save(const std::vector<AddressRange>& ranges) {
    ranges_ = ranges;
    copies_.assign(ranges.size(), 0);
    for (size_t k = 0; k < ranges.size(); ++k) {
      CU_CALL(cuMemAlloc(&copies_[k], ranges[k].size));
      CU_CALL(cuMemcpyDtoD(copies_[k], CUdeviceptr(ranges[k].address), ranges[k].size));
    }
    return OkStatus();
  }
  Status Restore() {
    for (size_t k = 0; k < ranges_.size(); ++k)
      CU_CALL(cuMemcpyDtoD(CUdeviceptr(ranges_[k].address), copies_[k], ranges_[k].size));
    return OkStatus();
  }

 private:
  std::vector<AddressRange> ranges_;  // translated addresses
  std::vector<CUdeviceptr> copies_;
};

}  // namespace

format::LaunchRecord GraphMemoryStub(const format::GraphLaunchRecord& g) {
  format::LaunchRecord l;
  l.index = g.index;
  l.snapshot_ranges = g.snapshot_ranges;
  l.coverage = g.coverage;
  return l;
}

void DescribeGraph(const format::GraphLaunchRecord& g, int64_t node, LaunchOutcome* out) {
  LaunchOutcome::GraphInfo& info = out->graph;
  info = {};  // counted afresh: the outcome may have been described before
  info.is_graph = true;
  info.nodes = uint32_t(g.nodes.size());
  for (const format::GraphNodeRecord& n : g.nodes) {
    info.kernels += n.kind == format::GraphNodeKind::kKernel;
    info.memsets += n.kind == format::GraphNodeKind::kMemset;
    info.memcpys += n.kind == format::GraphNodeKind::kMemcpy;
    info.empty += n.kind == format::GraphNodeKind::kEmpty;
  }
  info.node = node;
  out->index = g.index;
  if (node < 0) {
    out->function =
        StrFormat("graph launch (%zu nodes: %s)", g.nodes.size(), g.DescribeNodes().c_str());
    info.node_lines = GraphNodeLines(g);
    return;
  }
  info.ancestors = uint32_t(format::GraphAncestors(g, uint32_t(node)).size());
  const std::string name = size_t(node) < g.nodes.size() ? g.nodes[node].kernel.function : "";
  out->function = StrFormat(
      "graph launch %llu, node %lld of %zu (kernel %s): inputs rebuilt by running %u preceding "
      "node(s)",
      static_cast<unsigned long long>(g.index), static_cast<long long>(node), g.nodes.size(),
      name.c_str(), info.ancestors);
}

Status ReplayGraphLaunch(const format::ReplayCapture& cap, const format::GraphLaunchRecord& g,
                         uint64_t granularity, const ReplayMemory& mem, ModuleCache& modules,
                         KernelTimer& timer, L2Flusher& flusher, const GpuReplayOptions& o,
                         ReplayProgress* progress, LaunchOutcome* out) {
  auto setup_t0 = std::chrono::steady_clock::now();
  const int64_t node = o.node;
  if (node >= 0) {
    if (size_t(node) >= g.nodes.size())
      return NotFound(StrFormat("graph launch %llu has no node %lld (%zu nodes)",
                                static_cast<unsigned long long>(g.index),
                                static_cast<long long>(node), g.nodes.size()));
    if (g.nodes[node].kind != format::GraphNodeKind::kKernel)
      return InvalidArgument(StrFormat(
          "node %lld of graph launch %llu is a %s node: only kernel nodes replay alone (replay "
          "the whole graph launch with --launch %llu)",
          static_cast<long long>(node), static_cast<unsigned long long>(g.index),
          format::GraphNodeKindName(g.nodes[node].kind), static_cast<unsigned long long>(g.index)));
  }
  DescribeGraph(g, node, out);
  const Snapshots snapshots = SnapshotsOf(cap, g.index);
  const std::vector<const format::SnapshotRecord*>&before = snapshots.before,
                          &after = snapshots.after;
  CountRanges(RangesOf(before), granularity, mem, out);
  const Relocation& relocation = mem.relocation;
  // Each kernel node's function and parameters (pointers rewritten when
  // ranges were mapped elsewhere).
  std::vector<CUfunction> functions(g.nodes.size(), nullptr);
  std::vector<format::LaunchRecord> kernels(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].kind != format::GraphNodeKind::kKernel) continue;
    kernels[k] = g.nodes[k].kernel;
    out->param_words_rewritten += relocation.PatchWords(kernels[k].params, 0);
    ASSIGN_OR_RETURN(functions[k], LoadFunction(cap, kernels[k], modules));
  }
  out->memory = DescribeLaunchMemory(cap, GraphMemoryStub(g));
  out->recorded_ns = node < 0 ? g.recorded_ns : 0;  // a node's own time is not recorded
  out->iterations = o.iterations;
  out->l2_flushed = flusher.active();
  StreamAndEvents se;
  RETURN_IF_ERROR(se.Create());
  // The replay graphs: the whole graph; for a node, its ancestors (run
  // once) and the nodes after it (run once after its last replay).
  const std::vector<bool> all(g.nodes.size(), true);
  const format::GraphNodeSplit split =
      format::SplitForNodeReplay(g, uint32_t(std::max<int64_t>(node, 0)));
  const std::vector<bool>&prefix = split.before, &rest = split.after;
  ReplayGraph whole, first_part, last_part;
  if (node < 0) {
    RETURN_IF_ERROR(whole.Build(g, all, functions, kernels, relocation));
  } else {
    RETURN_IF_ERROR(first_part.Build(g, prefix, functions, kernels, relocation));
    RETURN_IF_ERROR(last_part.Build(g, rest, functions, kernels, relocation));
  }
  // The state every measured run starts from: the captured inputs, and for
  // a node what its ancestors made of them.
  SavedState saved;
  std::vector<AddressRange> translated;
  for (const format::SnapshotRecord* s : before)
    translated.push_back({relocation.Translate(s->address), s->size});
  auto start_state = [&](bool first) -> Status {
    uint64_t* words = first ? &out->memory_words_rewritten : nullptr;
    if (node < 0) return RestoreImages(cap, before, relocation, words);
    if (!first) return saved.Restore();
    RETURN_IF_ERROR(RestoreImages(cap, before, relocation, words));
    RETURN_IF_ERROR(first_part.Launch(se.stream()));
    CU_CALL(cuStreamSynchronize(se.stream()));
    return saved.Save(translated);
  };
  // What is measured: the whole graph, or the node alone.
  auto run = [&]() {
    if (node < 0) return whole.Launch(se.stream());
    return Launch(kernels[node], functions[node], se.stream());
  };
  MeasuredWork work{cap, relocation, after, se, timer, flusher, start_state, run};
  work.kernel_time = node >= 0;  // CUPTI's kernel time is that of one kernel
  work.compare_with_capture = node < 0;
  ColdOutputs cold;
  RETURN_IF_ERROR(MeasureColdRuns(work, o, setup_t0, progress, out, &cold));
  if (node < 0) return OkStatus();
  // The node's outputs, through the graph's final memory: the remaining
  // nodes run on what its last replay left, then every range is compared
  // with the capture.
  RETURN_IF_ERROR(last_part.Launch(se.stream()));
  CU_CALL(cuStreamSynchronize(se.stream()));
  std::vector<uint8_t> host;
  for (size_t k = 0; k < after.size(); ++k) {
    RETURN_IF_ERROR(DownloadOutput(work, k, &host));
    RETURN_IF_ERROR(CompareWithCapture(work, k, host, out));
  }
  return OkStatus();
}

}  // namespace tracesmith::replay::gpu
