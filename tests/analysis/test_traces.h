// Small hand-built traces for the analysis tests. Times are small integers
// (ns) so an oracle can walk every nanosecond.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "tracesmith/model/stack_builder.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::analysis::testing {

// Builds rows with sensible defaults; ids are interned in the trace.
class TraceBuilder {
 public:
  explicit TraceBuilder(uint32_t pid = 100) : pid_(pid) {}
  model::Trace& trace() { return t_; }

  uint32_t Str(const std::string& s) { return t_.strings.Intern(s); }
  void Pid(uint32_t pid) { pid_ = pid; }

  // A launch call on thread `tid` issuing a kernel on (device, stream).
  void Kernel(const std::string& name, uint32_t device, uint32_t stream, uint64_t start,
              uint64_t end, uint64_t api_start = 0, uint64_t api_end = 0, uint32_t graph = 0,
              uint32_t stack = 0, uint32_t tid = 1) {
    model::KernelEvent k{};
    k.start_ns = start;
    k.end_ns = end;
    k.pid = pid_;
    k.device_id = device;
    k.stream_id = stream;
    k.demangled_id = Str(name);
    k.graph_id = graph;
    if (api_end) {
      k.correlation_id = ++corr_;
      Api(graph ? "cudaGraphLaunch" : "cudaLaunchKernel", api_start, api_end, corr_, stack, tid);
    }
    t_.Rows<model::KernelEvent>().push_back(k);
  }
  void Memcpy(uint8_t kind, uint64_t bytes, uint32_t device, uint32_t stream, uint64_t start,
              uint64_t end, uint64_t api_start = 0, uint64_t api_end = 0, uint32_t src = 0,
              uint32_t dst = 0) {
    model::MemcpyEvent m{};
    m.start_ns = start;
    m.end_ns = end;
    m.bytes = bytes;
    m.pid = pid_;
    m.device_id = device;
    m.stream_id = stream;
    m.copy_kind = kind;
    m.src_device_id = src;
    m.dst_device_id = dst;
    if (api_end) {
      m.correlation_id = ++corr_;
      Api("cudaMemcpyAsync", api_start, api_end, corr_);
    }
    t_.Rows<model::MemcpyEvent>().push_back(m);
  }
  void Memset(uint64_t bytes, uint32_t device, uint32_t stream, uint64_t start, uint64_t end) {
    model::MemsetEvent m{};
    m.start_ns = start;
    m.end_ns = end;
    m.bytes = bytes;
    m.pid = pid_;
    m.device_id = device;
    m.stream_id = stream;
    t_.Rows<model::MemsetEvent>().push_back(m);
  }
  // A sync record; host syncs also get their API call.
  void Sync(uint8_t type, uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
            uint32_t event_id = 0) {
    model::SyncEvent s{};
    s.start_ns = start;
    s.end_ns = end;
    s.pid = pid_;
    s.device_id = device;
    s.stream_id = stream;
    s.sync_type = type;
    s.event_id = event_id;
    s.correlation_id = ++corr_;
    const char* api = type == model::kSyncStreamWaitEvent     ? "cudaStreamWaitEvent"
                      : type == model::kSyncStreamSynchronize ? "cudaStreamSynchronize"
                      : type == model::kSyncEventSynchronize  ? "cudaEventSynchronize"
                                                              : "cudaDeviceSynchronize";
    if (type == model::kSyncStreamWaitEvent) {
      Api(api, start, start + 1, corr_);
    } else {
      Api(api, start, end, corr_);
    }
    t_.Rows<model::SyncEvent>().push_back(s);
  }
  void Api(const std::string& name, uint64_t start, uint64_t end, uint32_t corr, uint32_t stack = 0,
           uint32_t tid = 1) {
    model::ApiEvent a{};
    a.start_ns = start;
    a.end_ns = end;
    a.correlation_id = corr;
    a.pid = pid_;
    a.tid = tid;
    a.name_id = Str(name);
    a.stack_id = stack;
    t_.Rows<model::ApiEvent>().push_back(a);
  }
  void Nvtx(const std::string& name, uint64_t start, uint64_t end, uint32_t tid = 1) {
    t_.Rows<model::NvtxRangeEvent>().push_back(model::NvtxRangeEvent{
        .start_ns = start, .end_ns = end, .pid = pid_, .tid = tid, .name_id = Str(name)});
  }
  void GraphLaunch(uint32_t graph, uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
                   uint32_t corr) {
    t_.Rows<model::GraphLaunchEvent>().push_back(model::GraphLaunchEvent{.start_ns = start,
                                                                         .end_ns = end,
                                                                         .correlation_id = corr,
                                                                         .pid = pid_,
                                                                         .device_id = device,
                                                                         .stream_id = stream,
                                                                         .graph_id = graph});
  }
  void Anchor(uint64_t gpu, uint64_t realtime, uint8_t phase = model::kClockStart) {
    t_.Rows<model::ClockAnchor>().push_back(model::ClockAnchor{.gpu_ns = gpu,
                                                               .realtime_ns = realtime,
                                                               .monotonic_ns = realtime,
                                                               .pid = pid_,
                                                               .phase = phase});
  }
  uint32_t last_correlation() const { return corr_; }

 private:
  model::Trace t_;
  uint32_t pid_;
  uint32_t corr_ = 0;
};

// The traces the golden tests use (each documented in test_traces.cc).
model::Trace OverlappingStreamsTrace();
model::Trace EventWaitTrace();
model::Trace GraphLaunchTrace();
model::Trace EmptyTrace();
model::Trace SingleEventTrace();
model::Trace TwoProcessTrace();
model::Trace CallSiteTrace();

// Host call stacks for tests: modules, native and Python frames, stacks
// (leaf first), interned in a TraceBuilder's trace.
struct StackMaker {
  TraceBuilder b;
  model::StackBuilder sb{&b.trace()};
  uint32_t next_mapping = 1;
  uint32_t Module(uint32_t id, const std::string& path) {
    model::Mapping m{};
    m.mapping_id = id;
    m.path_id = b.Str(path);
    b.trace().Rows<model::Mapping>().push_back(m);
    next_mapping = std::max(next_mapping, id + 1);
    return id;
  }
  uint32_t Module(const std::string& path) { return Module(next_mapping, path); }
  uint32_t Native(uint32_t mapping, const std::string& fn = "", uint64_t pc = 0x1000) {
    model::Frame f{};
    f.kind = model::kFrameNative;
    f.mapping_id = mapping;
    f.rel_pc = pc;
    f.function_id = fn.empty() ? 0 : b.Str(fn);
    return sb.InternFrame(f);
  }
  uint32_t Python(const std::string& fn, const std::string& file, uint32_t line) {
    model::Frame f{};
    f.kind = model::kFramePython;
    f.function_id = b.Str(fn);
    f.file_id = b.Str(file);
    f.line = line;
    return sb.InternFrame(f);
  }
  uint32_t Stack(std::initializer_list<uint32_t> leaf_first) {
    std::vector<uint32_t> v(leaf_first);
    return sb.InternStack(v);
  }
};

}  // namespace tracesmith::analysis::testing
