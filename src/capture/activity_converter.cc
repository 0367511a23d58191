#include "tracesmith/capture/activity_converter.h"

#include "tracesmith/capture/recorder.h"

#include <cstdlib>
#include <cstring>

namespace tracesmith::capture {
namespace {

using model::ApiDomain;

bool IsGraphLaunchApi(std::string_view name) {
  return name.rfind("cudaGraphLaunch", 0) == 0 || name.rfind("cuGraphLaunch", 0) == 0;
}

}  // namespace

std::string_view StripApiVersion(std::string_view name) {
  size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

ActivityConverter::ActivityConverter(RowSink* sink, NameSource* names, uint32_t pid)
    : sink_(sink), names_(names), pid_(pid) {}

uint32_t ActivityConverter::StringId(const char* p) {
  if (!p) return 0;
  auto it = ptr_ids_.find(p);
  if (it != ptr_ids_.end()) return it->second;
  uint32_t id = sink_->Intern(names_->String(p));
  ptr_ids_.emplace(p, id);
  return id;
}

uint32_t ActivityConverter::DemangledId(const char* p, uint32_t mangled_id) {
  if (!p || mangled_id == 0) return 0;
  auto it = demangled_ids_.find(mangled_id);
  if (it != demangled_ids_.end()) return it->second;
  const std::string mangled(names_->String(p));
  const std::string demangled = Demangle(mangled.c_str());
  // Not a C++ name: demangled == mangled.
  const uint32_t id = demangled == mangled ? mangled_id : sink_->Intern(demangled);
  demangled_ids_.emplace(mangled_id, id);
  return id;
}

void ActivityConverter::SeeThread(uint32_t tid) {
  if (tid == 0 || !threads_seen_.insert(tid).second) return;
  model::Thread t;
  t.tid = tid;
  t.pid = pid_;
  t.name_id = sink_->Intern(names_->ThreadName(tid));
  sink_->Append(t);
}

uint32_t ActivityConverter::DeviceOfContext(uint32_t context_id) const {
  auto it = context_device_.find(context_id);
  return it == context_device_.end() ? 0 : it->second;
}

void ActivityConverter::CompleteGraphLaunch(uint32_t correlation_id, uint32_t graph_id,
                                            uint32_t device_id, uint32_t context_id,
                                            uint32_t stream_id) {
  if (graph_id == 0) return;
  auto it = pending_graph_launches_.find(correlation_id);
  if (it == pending_graph_launches_.end()) {
    // CUPTI writes the API record when the call returns, usually after the
    // records of the work it launched: remember the work for the API row.
    if (graph_work_.size() > 65536) graph_work_.clear();
    graph_work_.emplace(correlation_id, GraphWork{graph_id, device_id, context_id, stream_id});
    return;
  }
  model::GraphLaunchEvent g = it->second;
  g.graph_id = graph_id;
  g.device_id = device_id;
  g.context_id = context_id;
  g.stream_id = stream_id;
  sink_->Append(g);
  pending_graph_launches_.erase(it);
}

void ActivityConverter::Convert(const CUpti_Activity* record) {
  ++stats_.records;
  uint32_t kind = static_cast<uint32_t>(record->kind);
  if (kind < 64) ++stats_.rows_per_kind[kind];
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
      ConvertKernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      ConvertMemcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      ConvertMemcpyPtoP(*reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      ConvertMemset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      ConvertSync(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      ConvertApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record), model::kApiRuntime);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      ConvertApi(*reinterpret_cast<const CUpti_ActivityAPI*>(record), model::kApiDriver);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      ConvertMarker(*reinterpret_cast<const CUpti_ActivityMarker2*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA:
      ConvertMarkerData(*reinterpret_cast<const CUpti_ActivityMarkerData2*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      ConvertMemory(*reinterpret_cast<const CUpti_ActivityMemory4*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      ConvertOverhead(*reinterpret_cast<const CUpti_ActivityOverhead3*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      ConvertExternal(*reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& c = *reinterpret_cast<const CUpti_ActivityContext3*>(record);
      context_device_[c.contextId] = c.deviceId;
      break;
    }
    default:
      ++stats_.unknown_kind;
      break;
  }
}

void ActivityConverter::ConvertKernel(const CUpti_ActivityKernel10& r) {
  if (kernel_observer_) kernel_observer_(r.correlationId, r.end);
  model::KernelEvent e;
  e.start_ns = r.start;
  e.end_ns = r.end;
  // CUPTI reports queued/submitted as CUPTI_TIMESTAMP_UNKNOWN (0) unless
  // launch latency collection is on.
  e.queued_ns = r.queued;
  e.submitted_ns = r.submitted;
  SetGpuIds(r, &e);
  e.name_id = StringId(r.name);
  e.demangled_id = DemangledId(r.name, e.name_id);
  e.grid_x = static_cast<uint32_t>(r.gridX);
  e.grid_y = static_cast<uint32_t>(r.gridY);
  e.grid_z = static_cast<uint32_t>(r.gridZ);
  e.block_x = static_cast<uint32_t>(r.blockX);
  e.block_y = static_cast<uint32_t>(r.blockY);
  e.block_z = static_cast<uint32_t>(r.blockZ);
  e.cluster_x = r.clusterX;
  e.cluster_y = r.clusterY;
  e.cluster_z = r.clusterZ;
  e.registers_per_thread = r.registersPerThread;
  e.static_shared_bytes = static_cast<uint32_t>(r.staticSharedMemory);
  e.dynamic_shared_bytes = static_cast<uint32_t>(r.dynamicSharedMemory);
  e.local_bytes_per_thread = r.localMemoryPerThread;
  e.graph_id = r.graphId;
  e.graph_node_id = r.graphNodeId;
  e.launch_type = r.launchType;
  context_device_.emplace(r.contextId, r.deviceId);
  sink_->Append(e);
  CompleteGraphLaunch(r.correlationId, r.graphId, r.deviceId, r.contextId, r.streamId);
}

namespace {
// The fields CUPTI's memcpy and peer-to-peer memcpy records share (ids: SetGpuIds).
template <typename Record>
model::MemcpyEvent MemcpyFields(const Record& r) {
  model::MemcpyEvent e;
  e.start_ns = r.start;
  e.end_ns = r.end;
  e.bytes = r.bytes;
  e.copy_kind = r.copyKind;
  e.src_kind = r.srcKind;
  e.dst_kind = r.dstKind;
  e.is_async = (r.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
  e.graph_id = r.graphId;
  e.graph_node_id = r.graphNodeId;
  return e;
}
}  // namespace

void ActivityConverter::ConvertMemcpy(const CUpti_ActivityMemcpy6& r) {
  model::MemcpyEvent e = MemcpyFields(r);
  SetGpuIds(r, &e);
  e.src_device_id = r.deviceId;
  e.dst_device_id = r.deviceId;
  context_device_.emplace(r.contextId, r.deviceId);
  sink_->Append(e);
  CompleteGraphLaunch(r.correlationId, r.graphId, r.deviceId, r.contextId, r.streamId);
}

void ActivityConverter::ConvertMemcpyPtoP(const CUpti_ActivityMemcpyPtoP4& r) {
  model::MemcpyEvent e = MemcpyFields(r);
  SetGpuIds(r, &e);
  e.src_device_id = r.srcDeviceId;
  e.dst_device_id = r.dstDeviceId;
  sink_->Append(e);
  CompleteGraphLaunch(r.correlationId, r.graphId, r.deviceId, r.contextId, r.streamId);
}

void ActivityConverter::ConvertMemset(const CUpti_ActivityMemset4& r) {
  model::MemsetEvent e;
  e.start_ns = r.start;
  e.end_ns = r.end;
  e.bytes = r.bytes;
  SetGpuIds(r, &e);
  e.value = r.value;
  e.memory_kind = static_cast<uint8_t>(r.memoryKind);
  e.graph_id = r.graphId;
  e.graph_node_id = r.graphNodeId;
  context_device_.emplace(r.contextId, r.deviceId);
  sink_->Append(e);
  CompleteGraphLaunch(r.correlationId, r.graphId, r.deviceId, r.contextId, r.streamId);
}

void ActivityConverter::ConvertSync(const CUpti_ActivitySynchronization2& r) {
  model::SyncEvent e;
  e.start_ns = r.start;
  e.end_ns = r.end;
  e.correlation_id = r.correlationId;
  // CUPTI_SYNCHRONIZATION_INVALID_VALUE (0xffffffff): the call has no event.
  e.event_id = r.cudaEventId == 0xffffffffu ? 0 : r.cudaEventId;
  e.pid = pid_;
  e.device_id = DeviceOfContext(r.contextId);
  e.context_id = r.contextId;
  // CUPTI uses 0xffffffff for "no stream" (context/event synchronize).
  e.stream_id = r.streamId == 0xffffffffu ? 0 : r.streamId;
  e.sync_type = static_cast<uint8_t>(r.type);
  e.stack_id = StackId(r.correlationId);
  sink_->Append(e);
}

void ActivityConverter::ConvertApi(const CUpti_ActivityAPI& r, uint8_t domain) {
  model::ApiEvent e;
  e.start_ns = r.start;
  e.end_ns = r.end;
  e.correlation_id = r.correlationId;
  e.stack_id = StackId(r.correlationId);
  e.pid = pid_;
  e.tid = r.threadId;
  e.domain = domain;
  e.cbid = r.cbid;
  std::string_view name = StripApiVersion(names_->ApiName(domain, r.cbid));
  e.name_id = sink_->Intern(name);
  e.return_code = static_cast<int32_t>(r.returnValue);
  if (track_runtime_ && domain == model::kApiRuntime)
    runtime_calls_[cycle_].insert(r.correlationId);
  if (!external_.empty()) {
    auto it = external_.find(r.correlationId);
    if (it != external_.end()) {
      e.external_kind = it->second.kind;
      e.external_id = it->second.id;
      external_.erase(it);
    }
  }
  SeeThread(r.threadId);
  sink_->Append(e);
  if (IsGraphLaunchApi(name)) {
    model::GraphLaunchEvent g;
    g.start_ns = r.start;
    g.end_ns = r.end;
    g.correlation_id = r.correlationId;
    g.stack_id = e.stack_id;
    g.pid = pid_;
    auto work = graph_work_.find(r.correlationId);
    if (work != graph_work_.end()) {
      g.graph_id = work->second.graph_id;
      g.device_id = work->second.device_id;
      g.context_id = work->second.context_id;
      g.stream_id = work->second.stream_id;
      graph_work_.erase(work);
      sink_->Append(g);
    } else {
      if (pending_graph_launches_.size() > 65536) {  // bounded: write them unjoined
        for (auto& [corr, pending] : pending_graph_launches_) sink_->Append(pending);
        pending_graph_launches_.clear();
      }
      pending_graph_launches_.emplace(r.correlationId, g);
    }
  }
}

void ActivityConverter::ConvertMarker(const CUpti_ActivityMarker2& r) {
  uint32_t tid = r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? r.objectId.pt.threadId : 0;
  uint32_t domain_id = StringId(r.domain);
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    model::NvtxMarkerEvent m;
    m.ts_ns = r.timestamp;
    m.pid = pid_;
    m.tid = tid;
    m.name_id = StringId(r.name);
    m.domain_id = domain_id;
    if (auto it = marker_style_.find(r.id); it != marker_style_.end()) {
      m.color = it->second.color;
      m.category = it->second.category;
      marker_style_.erase(it);
    }
    SeeThread(tid);
    sink_->Append(m);
    return;
  }
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    OpenRange open;
    open.row.start_ns = r.timestamp;
    open.row.range_id = r.id;
    open.row.pid = pid_;
    open.row.tid = tid;
    open.row.name_id = StringId(r.name);
    open.row.domain_id = domain_id;
    uint32_t& depth = range_depth_[tid];
    open.row.depth = static_cast<uint8_t>(depth < 255 ? depth : 255);
    ++depth;
    open_ranges_[r.id] = open;
    SeeThread(tid);
    return;
  }
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(r.id);
    if (it == open_ranges_.end()) {
      ++stats_.nvtx_unmatched_end;
      return;
    }
    model::NvtxRangeEvent e = it->second.row;
    open_ranges_.erase(it);
    e.end_ns = r.timestamp;
    if (auto d = range_depth_.find(e.tid); d != range_depth_.end() && d->second > 0) --d->second;
    if (auto s = marker_style_.find(r.id); s != marker_style_.end()) {
      e.color = s->second.color;
      e.category = s->second.category;
      marker_style_.erase(s);
    }
    sink_->Append(e);
  }
}

void ActivityConverter::ConvertMarkerData(const CUpti_ActivityMarkerData2& r) {
  // MARKER_DATA carries the color/category of the marker with the same id.
  // Bounded: styles of markers never seen again are dropped past 64k entries.
  if (marker_style_.size() > 65536) marker_style_.clear();
  uint32_t color = (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB) ? r.color : 0;
  marker_style_[r.id] = MarkerStyle{color, r.category};
  auto it = open_ranges_.find(r.id);
  if (it != open_ranges_.end()) {
    it->second.row.color = color;
    it->second.row.category = r.category;
  }
}

void ActivityConverter::ConvertMemory(const CUpti_ActivityMemory4& r) {
  if (!import_calls_.empty() && import_calls_.count(r.correlationId)) {
    ++stats_.ipc_memory_records;  // NoteImportCall: the capture's own rows say it
    return;
  }
  if (mapped_ && (mapping_calls_.count(r.correlationId) ||
                  (r.contextId == CUPTI_INVALID_CONTEXT_ID &&
                   r.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE))) {
    ++stats_.vmm_memory_records;  // NoteMappingCall: the capture's own rows say it
    return;
  }
  model::MemoryEvent e;
  e.ts_ns = r.timestamp;
  e.address = r.address;
  e.bytes = r.bytes;
  SetGpuIds(r, &e);
  e.op = static_cast<uint8_t>(r.memoryOperationType);
  e.memory_kind = static_cast<uint8_t>(r.memoryKind);
  e.is_async = r.isAsync ? 1 : 0;
  sink_->Append(e);
}

void ActivityConverter::ConvertOverhead(const CUpti_ActivityOverhead3& r) {
  model::OverheadEvent e;
  e.start_ns = r.start;
  e.end_ns = r.end;
  e.pid = pid_;
  if (r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
      r.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    e.tid = r.objectId.pt.threadId;
    SeeThread(e.tid);
  } else {
    e.device_id = r.objectId.dcs.deviceId;
  }
  e.overhead_kind = static_cast<uint32_t>(r.overheadKind);
  sink_->Append(e);
}

void ActivityConverter::ConvertExternal(const CUpti_ActivityExternalCorrelation& r) {
  // Bounded: an API row normally follows within the same flush.
  if (external_.size() > (1u << 20)) external_.clear();
  external_[r.correlationId] = External{static_cast<uint8_t>(r.externalKind), r.externalId};
}

void ActivityConverter::Finish() {
  for (auto& [corr, g] : pending_graph_launches_) sink_->Append(g);
  pending_graph_launches_.clear();
  stats_.nvtx_unclosed += open_ranges_.size();
  open_ranges_.clear();
}

}  // namespace tracesmith::capture
