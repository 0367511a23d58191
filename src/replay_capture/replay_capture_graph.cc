// ReplayCapturer's CUDA graph callbacks (replay_capture.h, graph_capture.h):
// graph instantiation, update, node parameter changes and destruction keep
// a clone of each executable graph's source; a selected cuGraphLaunch is
// recorded as a graph launch with the memory of all its nodes.
#include <cupti.h>

#include "replay_capture.h"
#include "tracesmith/capture/recorder.h"

namespace tracesmith::replay_capture {

bool ReplayCapturer::IsGraphCallback(CUpti_CallbackId cbid) {
  return GraphCallOf(cbid) != GraphCall::kNone;
}

void ReplayCapturer::OnGraph(CUpti_CallbackId cbid, const CUpti_CallbackData* info, bool active) {
  if (t_replay_busy || !info || !info->functionParams) return;
  const void* p = info->functionParams;
  const bool enter = info->callbackSite == CUPTI_API_ENTER;
  const auto* rc = static_cast<const CUresult*>(info->functionReturnValue);
  const bool succeeded = !enter && (!rc || *rc == CUDA_SUCCESS);
  switch (GraphCallOf(cbid)) {
    case GraphCall::kNone:
      return;
    case GraphCall::kInstantiate: {
      if (!succeeded) return;
      // Every instantiate variant starts with (CUgraphExec* phGraphExec, CUgraph hGraph).
      const auto* x = static_cast<const cuGraphInstantiateWithFlags_params*>(p);
      if (!x->phGraphExec) return;
      ReplayBusyScope busy;
      graph_execs_.Remember(*x->phGraphExec, x->hGraph);
      return;
    }
    case GraphCall::kUpdate: {
      if (!succeeded) return;
      // Both variants start with (CUgraphExec hGraphExec, CUgraph hGraph).
      const auto* x = static_cast<const cuGraphExecUpdate_v2_params*>(p);
      ReplayBusyScope busy;
      graph_execs_.Remember(x->hGraphExec, x->hGraph);
      return;
    }
    case GraphCall::kSetParams:
      // Every cuGraphExec*SetParams starts with the CUgraphExec.
      if (succeeded) graph_execs_.MarkChanged(*static_cast<const CUgraphExec*>(p));
      return;
    case GraphCall::kDestroy:
      if (enter) {
        ReplayBusyScope busy;
        graph_execs_.Forget(static_cast<const cuGraphExecDestroy_params*>(p)->hGraphExec);
      }
      return;
    case GraphCall::kLaunch: {
      if (!enter) {
        OnExit(info);
        return;
      }
      if (!active) return;
      const uint64_t index = launch_counter_.fetch_add(1, std::memory_order_relaxed);
      if (filter_.kind == capture::ReplayFilter::Kind::kOff) return;
      const auto* x = static_cast<const cuGraphLaunch_params*>(p);  // _ptsz: same layout
      ReplayBusyScope busy;
      OnGraphLaunch(info, index, x->hGraph, x->hStream,
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
      return;
    }
  }
}

bool ReplayCapturer::GraphSelected(uint64_t index, CUgraph clone, const WalkedGraph* walked) {
  if (filter_.kind != capture::ReplayFilter::Kind::kKernel) return filter_.SelectsIndex(index);
  if (!walked) return false;  // names unknown
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = graph_regex_cache_.find(clone);
    if (it != graph_regex_cache_.end()) return it->second;
  }
  bool match = false;
  for (const WalkedNode& n : walked->nodes)
    if (n.record.kind == format::GraphNodeKind::kKernel)
      match |= NameMatches(n.record.kernel.function.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  graph_regex_cache_[clone] = match;
  return match;
}

void ReplayCapturer::OnGraphLaunch(const CUpti_CallbackData* info, uint64_t index, CUgraphExec exec,
                                   CUstream stream, bool per_thread) {
  const GraphExecTable::Entry e = graph_execs_.Find(exec);
  if (!e.clone) {
    // Instantiated before the capture could see it (or its clone failed):
    // only a filter that selects without names can know it was wanted.
    if (!GraphSelected(index, nullptr, nullptr)) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.skipped_graph_unknown++ == 0)
      Note("graph launch %llu not recorded: its graph was instantiated before the capture saw it",
           static_cast<unsigned long long>(index));
    return;
  }
  // Walking costs driver queries per node: for kernel:REGEX only once per
  // graph (the selection is cached), else only for selected launches.
  WalkedGraph walked;
  bool have_walk = false;
  if (filter_.kind == capture::ReplayFilter::Kind::kKernel) {
    bool cached = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cached = graph_regex_cache_.count(e.clone) > 0;
    }
    if (!cached) {
      walked = WalkGraph(e.clone);
      have_walk = true;
    }
  }
  if (!GraphSelected(index, e.clone, &walked)) return;
  if (e.changed) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.skipped_graph_changed++ == 0)
      Note(
          "graph launch %llu not recorded: node parameters of its executable graph were changed "
          "after instantiation (cuGraphExec*SetParams); later ones are counted in the trace's "
          "stats",
          static_cast<unsigned long long>(index));
    return;
  }
  if (StreamCapturing(stream, index)) return;
  if (!have_walk) walked = WalkGraph(e.clone);
  if (!walked.unsupported.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.skipped_graph_unsupported;
    if (unsupported_noted_.emplace(walked.unsupported, true).second)
      Note(
          "graph launch %llu not recorded: its graph holds a %s node, which replay does not "
          "support (kernel, memset, device-to-device memcpy, empty and event nodes are)",
          static_cast<unsigned long long>(index), walked.unsupported.c_str());
    return;
  }
  if (!walked.error.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.skipped_error++ < 5)
      Note("graph launch %llu not recorded: %s", static_cast<unsigned long long>(index),
           walked.error.c_str());
    return;
  }
  Pending p;
  p.is_graph = true;
  p.launch.index = index;
  p.graph.index = index;
  p.graph.correlation_id = info->correlationId;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p.graph.stream_id = StreamIdLocked(stream, per_thread, index);
  }
  for (WalkedNode& n : walked.nodes) {
    const format::GraphNodeRecord& r = n.record;
    if (r.kind == format::GraphNodeKind::kKernel) AddParamRanges(r.kernel.params, &p.ranges);
    for (format::DeviceSpan s : {r.Written(), r.Read()})
      if (s.size) AddRange({s.address, s.size, {}}, &p.ranges);
    p.node_functions.push_back(n.function);
    p.graph.nodes.push_back(std::move(n.record));
  }
  const std::string what = StrFormat("graph launch of %zu nodes", p.graph.nodes.size());
  p.launch.function = what;
  RecordBefore(info, index, what, std::move(p));
}

void ReplayCapturer::FinishGraph(const CUpti_CallbackData* info, bool ok) {
  std::vector<CUfunction> functions;
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(info->correlationId);
    if (it == pending_.end()) return;
    functions = it->second.node_functions;
    for (const format::GraphNodeRecord& n : it->second.graph.nodes)
      names.push_back(n.kernel.function);
  }
  // Lazy loading loads modules during the launch: look them up now.
  std::vector<uint64_t> modules(functions.size(), 0);
  std::string missing;
  for (size_t k = 0; ok && k < functions.size(); ++k)
    if (functions[k]) {
      modules[k] = ModuleHashOf(functions[k], names[k]);
      if (modules[k] == 0 && missing.empty())
        missing = capture::Demangle(names[k].c_str()).substr(0, 100);
    }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(info->correlationId);
  format::GraphLaunchRecord graph = std::move(it->second.graph);
  const std::vector<Range> ranges = std::move(it->second.ranges);
  pending_.erase(it);
  if (!ok || !missing.empty()) {
    ++stats_.skipped_error;  // its queued images are dropped by Drain
    Note("graph launch %llu not recorded: %s", static_cast<unsigned long long>(graph.index),
         ok ? StrFormat("the module image of its kernel %s was not seen (loaded before the "
                        "capture started?)",
                        missing.c_str())
                  .c_str()
            : "a CUDA call failed while copying its memory");
    return;
  }
  for (size_t k = 0; k < graph.nodes.size(); ++k) graph.nodes[k].kernel.module_hash = modules[k];
  ++stats_.graph_launches_captured;
  uint64_t bytes = 0;
  for (const Range& r : ranges) bytes += r.size;
  Note("graph launch %llu (%s): %zu allocation(s), %.1f MiB",
       static_cast<unsigned long long>(graph.index), graph.DescribeNodes().c_str(), ranges.size(),
       double(bytes) / (1 << 20));
  graphs_out_.push_back(std::move(graph));
}

}  // namespace tracesmith::replay_capture
