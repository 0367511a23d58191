#include "graph_capture.h"

#include <cupti.h>

#include <algorithm>
#include <utility>

#include "tracesmith/base/status.h"

namespace tracesmith::replay_capture {

GraphCall GraphCallOf(uint32_t cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
      return GraphCall::kInstantiate;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2:
      return GraphCall::kUpdate;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecExternalSemaphoresSignalNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecExternalSemaphoresWaitNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecBatchMemOpNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams:
      return GraphCall::kSetParams;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
      return GraphCall::kDestroy;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return GraphCall::kLaunch;
    default:
      return GraphCall::kNone;
  }
}

void GraphExecTable::Remember(CUgraphExec exec, CUgraph source) {
  if (!exec || !source) return;
  CUgraph clone = nullptr;
  if (cuGraphClone(&clone, source) != CUDA_SUCCESS) clone = nullptr;
  CUgraph old = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = map_[exec];
    old = e.clone;
    e = {clone, false};
  }
  if (old) cuGraphDestroy(old);
}

void GraphExecTable::Forget(CUgraphExec exec) {
  CUgraph old = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(exec);
    if (it == map_.end()) return;
    old = it->second.clone;
    map_.erase(it);
  }
  if (old) cuGraphDestroy(old);
}

void GraphExecTable::MarkChanged(CUgraphExec exec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(exec);
  if (it != map_.end()) it->second.changed = true;
}

GraphExecTable::Entry GraphExecTable::Find(CUgraphExec exec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(exec);
  return it == map_.end() ? Entry{} : it->second;
}

namespace {

const char* NodeTypeName(CUgraphNodeType t) {
  switch (t) {
    case CU_GRAPH_NODE_TYPE_HOST:
      return "host";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
      return "external semaphore signal";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return "external semaphore wait";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return "memory allocation";
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return "memory free";
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return "batch memory op";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      return "conditional";
    default:
      return "unknown";
  }
}

// A device pointer (a memcpy end the replay can map): device or managed
// memory the driver knows.
bool OnDevice(CUmemorytype type, CUdeviceptr p) {
  if (type == CU_MEMORYTYPE_DEVICE) return true;
  if (type != CU_MEMORYTYPE_UNIFIED) return false;
  unsigned int t = 0;
  return cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS &&
         (t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED);
}

// Graph being flattened: nodes in discovery order, edges between them.
struct Flat {
  std::vector<WalkedNode> nodes;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  std::string unsupported, error;
};

// Kernel node: function, launch shape, parameters, the attributes replay
// passes (cluster dimension, cooperative, priority).
bool ReadKernelNode(CUgraphNode node, WalkedNode* out, std::string* error) {
  CUDA_KERNEL_NODE_PARAMS kp = {};
  if (cuGraphKernelNodeGetParams(node, &kp) != CUDA_SUCCESS) {
    *error = "cuGraphKernelNodeGetParams failed";
    return false;
  }
  CUfunction f = kp.func ? ResolveFunction(kp.func) : nullptr;
  if (!f && kp.kern && cuKernelGetFunction(&f, kp.kern) != CUDA_SUCCESS) f = nullptr;
  if (!f) {
    *error = "a kernel node's function could not be resolved";
    return false;
  }
  format::LaunchRecord& l = out->record.kernel;
  const char* name = nullptr;
  if (cuFuncGetName(&name, f) != CUDA_SUCCESS || !name) {
    *error = "cuFuncGetName failed for a kernel node";
    return false;
  }
  l.function = name;
  l.grid[0] = kp.gridDimX, l.grid[1] = kp.gridDimY, l.grid[2] = kp.gridDimZ;
  l.block[0] = kp.blockDimX, l.block[1] = kp.blockDimY, l.block[2] = kp.blockDimZ;
  l.dynamic_shared_bytes = kp.sharedMemBytes;
  if (!ReadKernelParams(f, kp.kernelParams, kp.extra, &l)) {
    *error = "a kernel node's parameters could not be read";
    return false;
  }
  CUkernelNodeAttrValue v = {};
  if (cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v) ==
          CUDA_SUCCESS &&
      v.clusterDim.x > 0) {
    l.cluster[0] = v.clusterDim.x, l.cluster[1] = v.clusterDim.y, l.cluster[2] = v.clusterDim.z;
  }
  for (CUlaunchAttributeID id : {CU_LAUNCH_ATTRIBUTE_COOPERATIVE, CU_LAUNCH_ATTRIBUTE_PRIORITY}) {
    v = {};
    if (cuGraphKernelNodeGetAttribute(node, id, &v) != CUDA_SUCCESS) continue;
    const int value = id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE ? v.cooperative : v.priority;
    if (value == 0) continue;
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    static_assert(sizeof(v) <= format::kMaxLaunchAttributeBytes);
    l.attributes.push_back({uint32_t(id), std::vector<uint8_t>(b, b + sizeof(v))});
  }
  out->function = f;
  return true;
}

// Reads one node of a non-graph kind into `out`; false (with `flat`'s
// unsupported or error set) when it cannot be recorded.
bool ReadNode(CUgraphNode node, CUgraphNodeType type, WalkedNode* out, Flat* flat) {
  format::GraphNodeRecord& r = out->record;
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      r.kind = format::GraphNodeKind::kKernel;
      return ReadKernelNode(node, out, &flat->error);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS p = {};
      if (cuGraphMemsetNodeGetParams(node, &p) != CUDA_SUCCESS) {
        flat->error = "cuGraphMemsetNodeGetParams failed";
        return false;
      }
      r.kind = format::GraphNodeKind::kMemset;
      r.dst = uint64_t(p.dst);
      r.dst_pitch = p.pitch;
      r.value = p.value;
      r.element_size = uint8_t(p.elementSize);
      r.width = p.width;
      r.height = p.height;
      return true;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      CUDA_MEMCPY3D p = {};
      if (cuGraphMemcpyNodeGetParams(node, &p) != CUDA_SUCCESS) {
        flat->error = "cuGraphMemcpyNodeGetParams failed";
        return false;
      }
      if (!OnDevice(p.srcMemoryType, p.srcDevice) || !OnDevice(p.dstMemoryType, p.dstDevice)) {
        flat->unsupported = "memcpy to or from host memory or an array";
        return false;
      }
      if (p.Depth > 1 || p.srcZ || p.dstZ) {
        flat->unsupported = "3-D memcpy";
        return false;
      }
      r.kind = format::GraphNodeKind::kMemcpy;
      r.src = uint64_t(p.srcDevice) + p.srcY * p.srcPitch + p.srcXInBytes;
      r.dst = uint64_t(p.dstDevice) + p.dstY * p.dstPitch + p.dstXInBytes;
      r.src_pitch = p.srcPitch;
      r.dst_pitch = p.dstPitch;
      r.width = p.WidthInBytes;
      r.height = std::max<size_t>(1, p.Height);
      return true;
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      r.kind = format::GraphNodeKind::kEmpty;  // ordering inside the graph only
      return true;
    default:
      flat->unsupported = NodeTypeName(type);
      return false;
  }
}

// Appends `graph`'s nodes to `flat` (child graphs flattened, `depth` levels
// at most) and returns the flattened indices where the graph starts (its
// roots) and ends (its leaves), for the edges of the graph around it.
bool Flatten(CUgraph graph, int depth, Flat* flat, std::vector<uint32_t>* entries,
             std::vector<uint32_t>* exits) {
  if (depth > 16) {
    flat->unsupported = "child graphs nested over 16 deep";
    return false;
  }
  size_t n = 0;
  if (cuGraphGetNodes(graph, nullptr, &n) != CUDA_SUCCESS) {
    flat->error = "cuGraphGetNodes failed";
    return false;
  }
  std::vector<CUgraphNode> nodes(n);
  if (n && cuGraphGetNodes(graph, nodes.data(), &n) != CUDA_SUCCESS) {
    flat->error = "cuGraphGetNodes failed";
    return false;
  }
  nodes.resize(n);
  if (n == 0) {  // an empty graph (or child graph): one empty node stands for it
    WalkedNode e;
    e.record.kind = format::GraphNodeKind::kEmpty;
    const uint32_t k = uint32_t(flat->nodes.size());
    flat->nodes.push_back(std::move(e));
    entries->push_back(k);
    exits->push_back(k);
    return true;
  }
  // Each node's flattened entry and exit indices.
  std::vector<std::vector<uint32_t>> in(n), out(n);
  for (size_t k = 0; k < n; ++k) {
    CUgraphNodeType type;
    if (cuGraphNodeGetType(nodes[k], &type) != CUDA_SUCCESS) {
      flat->error = "cuGraphNodeGetType failed";
      return false;
    }
    if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child = nullptr;
      if (cuGraphChildGraphNodeGetGraph(nodes[k], &child) != CUDA_SUCCESS) {
        flat->error = "cuGraphChildGraphNodeGetGraph failed";
        return false;
      }
      if (!Flatten(child, depth + 1, flat, &in[k], &out[k])) return false;
      continue;
    }
    if (flat->nodes.size() >= format::kMaxGraphNodes) {
      flat->unsupported = "graph of over 65536 nodes";
      return false;
    }
    WalkedNode w;
    if (!ReadNode(nodes[k], type, &w, flat)) return false;
    const uint32_t at = uint32_t(flat->nodes.size());
    flat->nodes.push_back(std::move(w));
    in[k] = out[k] = {at};
  }
  size_t m = 0;
  if (cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &m) != CUDA_SUCCESS) {
    flat->error = "cuGraphGetEdges failed";
    return false;
  }
  std::vector<CUgraphNode> from(m), to(m);
  // Edge data (programmatic dependencies) is read so that the query is not
  // lossy; every edge is replayed as a full dependency.
  std::vector<CUgraphEdgeData> data(m);
  if (m && cuGraphGetEdges(graph, from.data(), to.data(), data.data(), &m) != CUDA_SUCCESS) {
    flat->error = "cuGraphGetEdges failed";
    return false;
  }
  std::unordered_map<CUgraphNode, size_t> position;
  for (size_t k = 0; k < n; ++k) position[nodes[k]] = k;
  std::vector<bool> has_in(n, false), has_out(n, false);
  for (size_t e = 0; e < std::min(m, from.size()); ++e) {
    auto a = position.find(from[e]), b = position.find(to[e]);
    if (a == position.end() || b == position.end()) continue;
    has_out[a->second] = has_in[b->second] = true;
    for (uint32_t x : out[a->second])
      for (uint32_t y : in[b->second]) flat->edges.push_back({x, y});
  }
  for (size_t k = 0; k < n; ++k) {
    if (!has_in[k]) entries->insert(entries->end(), in[k].begin(), in[k].end());
    if (!has_out[k]) exits->insert(exits->end(), out[k].begin(), out[k].end());
  }
  return true;
}

}  // namespace

WalkedGraph WalkGraph(CUgraph graph) {
  Flat flat;
  std::vector<uint32_t> entries, exits;
  WalkedGraph out;
  if (!Flatten(graph, 0, &flat, &entries, &exits)) {
    out.unsupported = flat.unsupported;
    out.error = flat.error;
    return out;
  }
  auto order = format::TopologicalOrder(uint32_t(flat.nodes.size()), flat.edges);
  if (!order.ok()) {
    out.error = order.status().message();
    return out;
  }
  std::vector<uint32_t> rank(flat.nodes.size());
  for (uint32_t k = 0; k < order->size(); ++k) rank[(*order)[k]] = k;
  out.nodes.resize(flat.nodes.size());
  for (uint32_t k = 0; k < order->size(); ++k) out.nodes[k] = std::move(flat.nodes[(*order)[k]]);
  for (const auto& [a, b] : flat.edges) out.nodes[rank[b]].record.dependencies.push_back(rank[a]);
  for (WalkedNode& w : out.nodes) {
    auto& d = w.record.dependencies;
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
  }
  return out;
}

}  // namespace tracesmith::replay_capture
