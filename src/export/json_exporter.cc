// Chrome trace JSON in torch.profiler's (Kineto's) schema: the keys, units
// and categories of libkineto's output_json.cpp / CuptiActivity.cpp, so
// tools written for torch.profiler traces (HTA, TensorBoard plugin, Perfetto
// UI's JSON importer) read ours. Times: microseconds with three decimals,
// relative to "baseTimeNanoseconds" (exact to the nanosecond), which is
// Kineto's: the trace's first timestamp rounded down to a multiple of
// kKinetoBaseTimeStepNs.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "gpu_limits.h"
#include "kineto_collectives.h"
#include "kineto_derived.h"
#include "kineto_names.h"
#include "python_stacks.h"
#include "sinks.h"
#include "tracesmith/base/json_buffer.h"
#include "tracesmith/memory/memory_model.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::exporter {

namespace {

using namespace model;

// Kineto rounds its base time down to a multiple of "3 months" (7889238 s
// since the epoch), so traces of several ranks taken in one quarter share a
// base, and relative times stay below 2^53 ns (exact in a double).
constexpr uint64_t kKinetoBaseTimeStepNs = 7889238ull * 1000000000ull;

class JsonSink : public EventSink {
 public:
  explicit JsonSink(OutputFile* out) : out_(out) {}

  Status Begin(const ExportContext& ctx) override {
    ctx_ = &ctx;
    meta_ = ctx.meta;
    base_ = ctx.min_ts / kKinetoBaseTimeStepNs * kKinetoBaseTimeStepNs;
    derived_.Begin(ctx);
    python_ = std::make_unique<PythonFunctionSlices>(meta_);
    ops_ = std::make_unique<PythonFunctionSlices>(meta_, PythonFunctionSlices::Frames::kTorchOps);
    for (const auto& d : meta_->Rows<Device>()) devices_[d.device_id] = d;
    j_.Raw("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
    bool first = true;
    for (const auto& [id, d] : devices_) {
      SmLimits lim = SmLimitsFor(d.cc_major, d.cc_minor);
      j_.Raw(first ? "\n    {" : ",\n    {");
      first = false;
      j_.Raw("\"id\": ");
      j_.Uint(d.device_id);
      j_.Raw(", \"name\": ");
      j_.String(meta_->strings.Get(d.name_id));
      j_.Raw(", \"totalGlobalMem\": ");
      j_.Uint(d.memory_bytes);
      j_.Raw(", \"computeMajor\": ");
      j_.Uint(d.cc_major);
      j_.Raw(", \"computeMinor\": ");
      j_.Uint(d.cc_minor);
      j_.Raw(", \"maxThreadsPerBlock\": ");
      j_.Uint(d.max_threads_per_block);
      j_.Raw(", \"maxThreadsPerMultiprocessor\": ");
      j_.Uint(lim.max_threads);
      j_.Raw(", \"regsPerBlock\": ");
      j_.Uint(d.max_registers_per_block);
      j_.Raw(", \"regsPerMultiprocessor\": ");
      j_.Uint(lim.registers);
      j_.Raw(", \"warpSize\": 32, \"sharedMemPerBlock\": ");
      j_.Uint(d.max_shared_per_block);
      j_.Raw(", \"sharedMemPerBlockOptin\": ");
      j_.Uint(lim.shared_per_block_optin);
      j_.Raw(", \"sharedMemPerMultiprocessor\": ");
      j_.Uint(lim.shared_bytes);
      j_.Raw(", \"numSms\": ");
      j_.Uint(d.sm_count);
      j_.Raw("}");
    }
    j_.Raw("\n  ],\n  \"trace_id\": \"");
    j_.Raw(TraceId(ctx));
    j_.Raw("\",\n");
    // torch.profiler(profile_memory=True) writes this beside its [memory] events.
    if (ctx.memory_events > 0) j_.Raw("  \"profile_memory\": 1,\n");
    const auto& procs = meta_->Rows<Process>();
    if (!procs.empty()) {
      const Process& p = procs.front();
      if (p.driver_version) Field("cuda_driver_version", p.driver_version);
      if (p.runtime_version) Field("cuda_runtime_version", p.runtime_version);
      if (p.cupti_version) Field("cupti_version", p.cupti_version);
    }
    j_.Raw("  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
    j_.Uint(base_);
    j_.Raw(",\n");
    // As torch.profiler writes it for a rank of a distributed job; HTA
    // reads a directory of such files by their "rank".
    if (const DistributedInfo& d = ctx.options.distributed; d.rank >= 0) {
      j_.Raw("  \"distributedInfo\": {");
      if (!d.backend.empty()) {
        j_.Raw("\"backend\": ");
        j_.String(d.backend);
        j_.Raw(", ");
      }
      j_.Raw("\"rank\": ");
      j_.Uint(static_cast<uint64_t>(d.rank));
      if (d.world_size) {
        j_.Raw(", \"world_size\": ");
        j_.Uint(d.world_size);
      }
      j_.Raw("},\n");
    }
    j_.Raw("  \"traceEvents\": [");
    // Names of processes, threads, devices and streams ("M" events).
    // Sort indices as Kineto writes them: processes by pid, GPUs after
    // every process (5000000 + device), threads by tid.
    for (const auto& p : procs) {
      if (p.name_id) Metadata("process_name", p.pid, 0, "name", meta_->strings.Get(p.name_id));
      SortIndex("process_sort_index", p.pid, 0, p.pid);
    }
    for (const auto& t : meta_->Rows<Thread>()) {
      if (!t.name_id) continue;
      Metadata("thread_name", t.pid, t.tid, "name", meta_->strings.Get(t.name_id));
      SortIndex("thread_sort_index", t.pid, t.tid, t.tid);
    }
    for (const auto& [id, d] : devices_) {
      Metadata("process_name", id, 0, "name", "GPU " + std::to_string(id));
      Metadata("process_labels", id, 0, "labels", meta_->strings.Get(d.name_id));
      SortIndex("process_sort_index", id, 0, 5000000ull + id);
    }
    return Flush();
  }

  void On(const KernelEvent& k) override {
    ++kernels_;
    CompleteQuoted("kernel", QuotedName(k.demangled_id ? k.demangled_id : k.name_id), k.device_id,
                   k.stream_id, k.start_ns, k.end_ns);
    j_.Raw(",\n    \"args\": {\"External id\": ");
    j_.Uint(ExternalIdOf(k.pid, k.correlation_id));
    derived_.OnKernel(k);
    derived_.OnGpuOp(k.pid, k.correlation_id, k.device_id, k.stream_id, k.start_ns, k.end_ns);
    j_.Raw(", \"queued\": ");
    j_.Uint(k.queued_ns > base_ ? (k.queued_ns - base_) / 1000 : 0);
    j_.Raw(", \"device\": ");
    j_.Uint(k.device_id);
    j_.Raw(", \"context\": ");
    j_.Uint(k.context_id);
    j_.Raw(", \"stream\": ");
    j_.Uint(k.stream_id);
    j_.Raw(", \"correlation\": ");
    j_.Uint(k.correlation_id);
    j_.Raw(collectives_.KernelArgs(
        k, meta_->strings.Get(k.demangled_id ? k.demangled_id : k.name_id)));
    j_.Raw(LaunchArgs(k));
    FlowEnd(k.pid, k.correlation_id, k.device_id, k.stream_id, k.start_ns);
    MaybeFlush();
  }

  void On(const MemcpyEvent& m) override {
    std::string& name = derived_names_[(m.copy_kind << 16) | (m.src_kind << 8) | m.dst_kind];
    if (name.empty())
      name = Quoted(std::string("Memcpy ") + CopyKindName(m.copy_kind) + " (" +
                    KinetoMemoryKind(m.src_kind) + " -> " + KinetoMemoryKind(m.dst_kind) + ")");
    CompleteQuoted("gpu_memcpy", name, m.device_id, m.stream_id, m.start_ns, m.end_ns);
    CopyArgs(m.pid, m.device_id, m.context_id, m.stream_id, m.correlation_id, m.bytes, m.start_ns,
             m.end_ns);
    derived_.OnGpuOp(m.pid, m.correlation_id, m.device_id, m.stream_id, m.start_ns, m.end_ns);
    FlowEnd(m.pid, m.correlation_id, m.device_id, m.stream_id, m.start_ns);
    MaybeFlush();
  }
  void On(const MemsetEvent& m) override {
    std::string& name = derived_names_[(1u << 24) | m.memory_kind];
    if (name.empty())
      name = Quoted(std::string("Memset (") + KinetoMemoryKind(m.memory_kind) + ")");
    CompleteQuoted("gpu_memset", name, m.device_id, m.stream_id, m.start_ns, m.end_ns);
    CopyArgs(m.pid, m.device_id, m.context_id, m.stream_id, m.correlation_id, m.bytes, m.start_ns,
             m.end_ns);
    derived_.OnGpuOp(m.pid, m.correlation_id, m.device_id, m.stream_id, m.start_ns, m.end_ns);
    FlowEnd(m.pid, m.correlation_id, m.device_id, m.stream_id, m.start_ns);
    MaybeFlush();
  }
  void On(const SyncEvent& e) override {
    // A sync of no stream (context or event synchronize; stream 0 in the
    // model) is on stream -1 as Kineto writes it: CUPTI's invalid stream id
    // (0xffffffff) read as int32, for both tid and args.stream.
    const int32_t stream = e.stream_id == 0 ? -1 : static_cast<int32_t>(e.stream_id);
    Sep();
    j_.Raw("{\n    \"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": ");
    j_.String(KinetoSyncType(e.sync_type));
    j_.Raw(", \"pid\": ");
    j_.Uint(e.device_id);
    j_.Raw(", \"tid\": ");
    j_.Int(stream);
    j_.Raw(",\n    \"ts\": ");
    j_.Micros(e.start_ns - base_);
    j_.Raw(", \"dur\": ");
    j_.Micros(e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0);
    j_.Raw(",\n    \"args\": {\"cuda_sync_kind\": ");
    j_.String(KinetoSyncType(e.sync_type));
    j_.Raw(", \"stream\": ");
    j_.Int(stream);
    j_.Raw(", \"correlation\": ");
    j_.Uint(e.correlation_id);
    j_.Raw(", \"device\": ");
    j_.Uint(e.device_id);
    j_.Raw(", \"context\": ");
    j_.Uint(e.context_id);
    j_.Raw("}\n  }");
    MaybeFlush();
  }
  void On(const ApiEvent& a) override {
    // First: the frames this call's stack closes are written before it.
    python_->OnCall(a.pid, a.tid, a.stack_id, a.start_ns, a.end_ns,
                    [this](const PythonFunctionSlices::Slice& f) { PythonFunction(f); });
    ops_->OnCall(a.pid, a.tid, a.stack_id, a.start_ns, a.end_ns,
                 [this](const PythonFunctionSlices::Slice& f) { CpuOp(f); });
    std::string_view step;  // torch.optim's step: its launches make its GPU copy
    if (const uint64_t id = ops_->OpenSlice(a.pid, a.tid, "Optimizer.step#", &step); id != 0)
      if (a.correlation_id != 0)
        derived_.OnAnnotatedLaunch(a.pid, a.correlation_id, OpId(id), step);
    CompleteQuoted(a.domain == kApiDriver ? "cuda_driver" : "cuda_runtime", QuotedName(a.name_id),
                   a.pid, a.tid, a.start_ns, a.end_ns);
    j_.Raw(",\n    \"args\": {\"External id\": ");
    j_.Uint(derived_.ExternalId(a.pid, a.correlation_id, a.external_id));
    if (a.external_id != 0 && a.correlation_id != 0) RememberExternalId(a);
    derived_.OnApiCall(a);
    collectives_.OnCall(a, meta_->strings.Get(a.name_id));
    j_.Raw(", \"cbid\": ");
    j_.Uint(a.cbid);
    j_.Raw(", \"correlation\": ");
    j_.Uint(a.correlation_id);
    j_.Raw("}\n  }");
    if (a.correlation_id != 0)
      call_threads_[a.correlation_id % call_threads_.size()] = {a.pid, a.correlation_id, a.tid};
    uint64_t flow_id;
    if (flows_tracker_.StartFromApi(*ctx_, a.pid, a.correlation_id, &flow_id)) {
      Flow('s', flow_id, a.pid, a.tid, a.start_ns);
      ++flows_;
    }
    MaybeFlush();
  }
  void On(const NvtxPayloadEvent& p) override {
    collectives_.OnPayload(p, meta_->strings.Get(p.text_id));
  }
  void On(const NvtxRangeEvent& r) override {
    std::string_view domain = meta_->strings.Get(r.domain_id);
    const bool kineto = IsKinetoHostCategory(domain);
    CompleteQuoted(kineto ? domain : "user_annotation", QuotedName(r.name_id), r.pid, r.tid,
                   r.start_ns, r.end_ns);
    // Ranges of an imported torch trace have their GPU annotations and ids.
    const bool captured = !kineto && r.kineto_args == 0;
    const uint64_t id = derived_.OnNvtxRange(r, meta_->strings.Get(r.name_id), captured);
    collectives_.OnRange(r, meta_->strings.Get(r.name_id));
    if (r.kineto_args != 0) KinetoOpArgs(r);
    if (id != 0) {
      j_.Raw(",\n    \"args\": {\"External id\": ");
      j_.Uint(id);
      j_.Raw("}");
    }
    j_.Raw("\n  }");
    // torch's forward -> backward links of an imported trace: the start on
    // the forward op, the end on its backward op (written only once its
    // start was: in time order the forward op comes first).
    if (r.flow_out_id != 0) {
      Flow('s', "fwdbwd", r.flow_out_id, r.pid, r.tid, r.start_ns);
      fwdbwd_started_.insert(r.flow_out_id);
    }
    if (r.flow_in_id != 0 && fwdbwd_started_.erase(r.flow_in_id))
      Flow('f', "fwdbwd", r.flow_in_id, r.pid, r.tid, r.start_ns);
    MaybeFlush();
  }
  void On(const NvtxMarkerEvent& m) override {
    Sep();
    j_.Raw("{\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": ");
    j_.String(meta_->strings.Get(m.name_id));
    j_.Raw(",\n    \"pid\": ");
    j_.Uint(m.pid);
    j_.Raw(", \"tid\": ");
    j_.Uint(m.tid);
    j_.Raw(",\n    \"ts\": ");
    j_.Micros(m.ts_ns - base_);
    j_.Raw("\n  }");
  }
  void On(const OverheadEvent& o) override {
    Complete("overhead", "TraceSmith overhead", o.pid, o.tid, o.start_ns, o.end_ns);
    j_.Raw("\n  }");
  }
  // Memory through the live-memory model (analysis::LiveMemory), written
  // twice: torch.profiler's "[memory]" instants (profile_memory=True) on the
  // calling thread, and a "C" counter of live bytes per process, device and
  // memory space on the device's row.
  void On(const MemoryEvent& m) override {
    const analysis::MemoryChange c = live_.Apply(m);
    if (c.kind != analysis::MemoryChange::kAlloc && c.kind != analysis::MemoryChange::kFree)
      return;  // VMM mappings, address reservations, IPC imports, frees of unknown memory
    MemoryInstant(m, c);
    MemoryCounter(c.key, c.ts_ns, c.live_bytes);
    // An allocation at a live address ended the earlier one (its free was
    // lost): that one may have been of another device or space.
    if (c.replaced.bytes != 0) {
      const auto& totals = live_.totals();
      for (auto it = totals.lower_bound({c.key.pid, 0, analysis::MemorySpace::kDevice});
           it != totals.end() && it->first.pid == c.key.pid; ++it)
        if (it->first != c.key && counter_bytes_[it->first] != it->second.live_bytes)
          MemoryCounter(it->first, c.ts_ns, it->second.live_bytes);
    }
  }
  void On(const CounterEvent& c) override {
    Sep();
    j_.Raw("{\n    \"ph\": \"C\", \"name\": ");
    j_.String(meta_->strings.Get(c.name_id));
    j_.Raw(", \"pid\": ");
    j_.Uint(c.device_id);
    j_.Raw(", \"tid\": 0, \"ts\": ");
    j_.Micros(c.ts_ns - base_);
    j_.Raw(", \"args\": {\"value\": ");
    j_.Double(c.value);
    j_.Raw("}\n  }");
  }

  // The program's own counters as torch.profiler writes counters ("C", the
  // value under the counter's name); its ranges as user_annotation ranges and
  // its instants as instants, on their thread, with their arguments.
  void On(const AppCounterEvent& c) override {
    Sep();
    j_.Raw("{\n    \"ph\": \"C\", \"name\": ");
    j_.Raw(QuotedName(c.name_id));
    j_.Raw(", \"pid\": ");
    j_.Uint(c.pid);
    j_.Raw(", \"tid\": ");
    j_.Uint(c.tid);
    j_.Raw(", \"ts\": ");
    j_.Micros(c.ts_ns - base_);
    j_.Raw(", \"args\": {");
    j_.Raw(QuotedName(c.name_id));
    j_.Raw(": ");
    j_.Double(c.value);
    j_.Raw("}\n  }");
    MaybeFlush();
  }
  void On(const AppEvent& e) override {
    if (e.kind == kAppInstant) {
      Sep();
      j_.Raw("{\n    \"ph\": \"i\", \"cat\": \"user_annotation\", \"s\": \"t\", \"name\": ");
      j_.Raw(QuotedName(e.name_id));
      j_.Raw(",\n    \"pid\": ");
      j_.Uint(e.pid);
      j_.Raw(", \"tid\": ");
      j_.Uint(e.tid);
      j_.Raw(",\n    \"ts\": ");
      j_.Micros(e.start_ns - base_);
    } else {
      CompleteQuoted("user_annotation", QuotedName(e.name_id), e.pid, e.tid, e.start_ns, e.end_ns);
      derived_.OnAppRange(e, meta_->strings.Get(e.name_id));
    }
    if (e.args_id != 0) {
      j_.Raw(",\n    \"args\": ");
      j_.Raw(ArgsObject(e.args_id));
    }
    j_.Raw("\n  }");
    MaybeFlush();
  }

  Status Finish(ExportStats* stats) override {
    python_->Finish([this](const PythonFunctionSlices::Slice& f) { PythonFunction(f); });
    ops_->Finish([this](const PythonFunctionSlices::Slice& f) { CpuOp(f); });
    for (const KinetoDerived::Slice& d : derived_.Finish(*meta_)) {
      Complete(d.cat, d.name, d.pid, d.tid, d.start_ns, d.end_ns);
      if (d.external_id != 0) {
        j_.Raw(",\n    \"args\": {\"External id\": ");
        j_.Uint(d.external_id);
        j_.Raw("}");
      }
      j_.Raw("\n  }");
      MaybeFlush();
    }
    Sep();
    j_.Raw(
        "{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", "
        "\"tid\": \"\", \"ts\": ");
    j_.Micros(ctx_->max_ts > base_ ? ctx_->max_ts - base_ : 0);
    j_.Raw("\n  }\n  ],\n  \"traceName\": \"tracesmith\"\n}\n");
    stats->kernel_events = kernels_;
    stats->flows = flows_;
    return Flush();
  }

 private:
  // torch's [memory] event (profiler_kineto.cpp: a CPU instant with the
  // allocator's totals after the event): "Device Type" is c10's (1 CUDA for
  // device and managed memory, 0 CPU for pinned and other host memory, whose
  // "Device Id" is -1); "Bytes" negative for a free (its allocation's size);
  // "Addr" the address (a cuMemCreate's handle). "Total Allocated" is the
  // model's live bytes of the process on that device type and id;
  // "Total Reserved" the same number: CUDA-level tracing sees memory taken
  // from the driver, which a caching allocator has reserved, not what it
  // handed out of it.
  void MemoryInstant(const MemoryEvent& m, const analysis::MemoryChange& c) {
    const bool cuda = c.key.space == analysis::MemorySpace::kDevice ||
                      c.key.space == analysis::MemorySpace::kManaged;
    uint64_t total = 0;
    const auto& totals = live_.totals();
    for (auto it = totals.lower_bound({c.key.pid, 0, analysis::MemorySpace::kDevice});
         it != totals.end() && it->first.pid == c.key.pid; ++it) {
      const analysis::MemorySpace sp = it->first.space;
      const bool cuda_key =
          sp == analysis::MemorySpace::kDevice || sp == analysis::MemorySpace::kManaged;
      if (cuda_key == cuda && (!cuda || it->first.device_id == c.key.device_id))
        total += it->second.live_bytes;
    }
    const CallThread& t = call_threads_[m.correlation_id % call_threads_.size()];
    const uint32_t tid = m.correlation_id != 0 && t.corr == m.correlation_id && t.pid == m.pid
                             ? t.tid
                             : m.pid;  // the call not seen: the main thread
    Sep();
    j_.Raw(
        "{\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", "
        "\"name\": \"[memory]\",\n    \"pid\": ");
    j_.Uint(m.pid);
    j_.Raw(", \"tid\": ");
    j_.Uint(tid);
    j_.Raw(",\n    \"ts\": ");
    j_.Micros(c.ts_ns > base_ ? c.ts_ns - base_ : 0);
    j_.Raw(",\n    \"args\": {\"Total Reserved\": ");
    j_.Uint(total);
    j_.Raw(", \"Total Allocated\": ");
    j_.Uint(total);
    j_.Raw(", \"Bytes\": ");
    j_.Int(c.kind == analysis::MemoryChange::kFree ? -static_cast<int64_t>(c.alloc.bytes)
                                                   : static_cast<int64_t>(c.alloc.bytes));
    j_.Raw(", \"Device Id\": ");
    j_.Int(cuda ? static_cast<int64_t>(c.key.device_id) : -1);
    j_.Raw(cuda ? ", \"Device Type\": 1, \"Addr\": " : ", \"Device Type\": 0, \"Addr\": ");
    j_.Uint(c.alloc.address);
    j_.Raw("}\n  }");
    MaybeFlush();
  }
  // Live bytes of one process, device and space, on the device's row:
  // "Device memory in use (pid 123)".
  void MemoryCounter(const analysis::MemoryKey& key, uint64_t ts, uint64_t bytes) {
    counter_bytes_[key] = bytes;
    std::string name = analysis::MemorySpaceName(key.space);
    name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
    name += " memory in use (pid " + std::to_string(key.pid) + ")";
    Sep();
    j_.Raw("{\n    \"ph\": \"C\", \"name\": ");
    j_.String(name);
    j_.Raw(", \"pid\": ");
    j_.Uint(key.device_id);
    j_.Raw(", \"tid\": 0, \"ts\": ");
    j_.Micros(ts > base_ ? ts - base_ : 0);
    j_.Raw(", \"args\": {\"bytes\": ");
    j_.Uint(bytes);
    j_.Raw("}\n  }");
  }
  // A frame of the launch-time stacks as torch's python_function slice.
  void PythonFunction(const PythonFunctionSlices::Slice& f) {
    Complete("python_function", f.name, f.pid, f.tid, f.start_ns, f.end_ns);
    j_.Raw(",\n    \"args\": {");
    if (f.parent_id != 0) {
      j_.Raw("\"Python parent id\": ");
      j_.Uint(f.parent_id);
      j_.Raw(", ");
    }
    j_.Raw("\"Python id\": ");
    j_.Uint(f.id);
    j_.Raw(", \"Python thread\": ");
    j_.Uint(f.thread);
    j_.Raw("}\n  }");
    MaybeFlush();
  }
  // An operator of the launch-time stacks as torch's cpu_op (the optimizer's
  // step as its user_annotation). Its External id
  // is its own (max + 1 + 2^48 + its number; its launches keep theirs);
  // torch's Record function id, Sequence number, ... are not known.
  void CpuOp(const PythonFunctionSlices::Slice& f) {
    const bool annotation = f.name.starts_with("Optimizer.step#");  // torch.optim's hook
    Complete(annotation ? "user_annotation" : "cpu_op", f.name, f.pid, f.tid, f.start_ns, f.end_ns);
    j_.Raw(",\n    \"args\": {\"External id\": ");
    j_.Uint(OpId(f.id));
    j_.Raw("}\n  }");
    MaybeFlush();
  }
  uint64_t OpId(uint64_t slice) const {
    return ctx_->max_external_id + 1 + (uint64_t{1} << 48) + slice;
  }
  void Field(const char* key, uint64_t v) {
    j_.Raw("  \"");
    j_.Raw(key);
    j_.Raw("\": ");
    j_.Uint(v);
    j_.Raw(",\n");
  }
  void SortIndex(const char* what, uint64_t pid, uint64_t tid, uint64_t index) {
    Sep();
    j_.Raw("{\n    \"name\": \"");
    j_.Raw(std::string_view(what));
    j_.Raw("\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": ");
    j_.Uint(pid);
    j_.Raw(", \"tid\": ");
    j_.Uint(tid);
    j_.Raw(",\n    \"args\": {\"sort_index\": ");
    j_.Uint(index);
    j_.Raw("}\n  }");
  }
  // 32 upper-case hex digits like Kineto's trace id, derived from the trace
  // (time range, event count, first pid) so the same trace exports the same
  // bytes.
  static std::string TraceId(const ExportContext& ctx) {
    uint64_t pid = ctx.meta->Rows<Process>().empty() ? 0 : ctx.meta->Rows<Process>()[0].pid;
    uint64_t h[2] = {HashMix(HashMix(ctx.min_ts, ctx.max_ts), ctx.event_count),
                     HashMix(HashMix(ctx.max_ts, pid), ctx.min_ts ^ 0x5bd1e995)};
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llX%016llX", static_cast<unsigned long long>(h[0]),
                  static_cast<unsigned long long>(h[1]));
    return buf;
  }
  // Kineto's "External id" of a GPU op is that of the framework op that
  // launched it: the external id of the launch call with the same
  // correlation id (calls come before their GPU ops in time order). Without
  // one, the launch's own (KinetoDerived::ExternalId), as its call has.
  void RememberExternalId(const ApiEvent& a) {
    uint32_t idx = ctx_->correlations.PidIndex(a.pid);
    if (idx >= external_ids_.size()) external_ids_.resize(idx + 1);
    external_ids_[idx].Set(a.correlation_id, a.external_id);
  }
  uint64_t ExternalIdOf(uint32_t pid, uint32_t corr) {
    if (corr == 0) return 0;
    uint32_t idx = ctx_->correlations.PidIndex(pid);
    return derived_.ExternalId(pid, corr,
                               idx < external_ids_.size() ? external_ids_[idx].Get(corr) : 0);
  }
  void Sep() {
    j_.Raw(first_event_ ? "\n  " : ",\n  ");
    first_event_ = false;
  }
  void Metadata(const char* what, uint64_t pid, uint64_t tid, const char* key,
                std::string_view value) {
    Sep();
    j_.Raw("{\n    \"name\": \"");
    j_.Raw(what);
    j_.Raw("\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": ");
    j_.Uint(pid);
    j_.Raw(", \"tid\": ");
    j_.Uint(tid);
    j_.Raw(",\n    \"args\": {\"");
    j_.Raw(key);
    j_.Raw("\": ");
    j_.String(value);
    j_.Raw("}\n  }");
  }
  // Opens an "X" event; the caller adds ",\n    \"args\": {...}" or nothing,
  // then closes it with "\n  }".
  void Complete(std::string_view cat, std::string_view name, uint64_t pid, uint64_t tid,
                uint64_t start, uint64_t end) {
    CompleteQuoted(cat, Quoted(name), pid, tid, start, end);
  }
  static std::string Quoted(std::string_view name) {
    std::string quoted = "\"";
    JsonBuffer::Escape(name, &quoted);
    quoted.push_back('"');
    return quoted;
  }
  void CompleteQuoted(std::string_view cat, std::string_view quoted_name, uint64_t pid,
                      uint64_t tid, uint64_t start, uint64_t end) {
    Sep();
    j_.Raw("{\n    \"ph\": \"X\", \"cat\": \"");
    j_.Raw(cat);
    j_.Raw("\", \"name\": ");
    j_.Raw(quoted_name);
    j_.Raw(", \"pid\": ");
    j_.Uint(pid);
    j_.Raw(", \"tid\": ");
    j_.Uint(tid);
    j_.Raw(",\n    \"ts\": ");
    j_.Micros(start - base_);
    j_.Raw(", \"dur\": ");
    j_.Micros(end > start ? end - start : 0);
  }
  void CopyArgs(uint32_t pid, uint32_t device, uint32_t context, uint32_t stream, uint32_t corr,
                uint64_t bytes, uint64_t start, uint64_t end) {
    j_.Raw(",\n    \"args\": {\"External id\": ");
    j_.Uint(ExternalIdOf(pid, corr));
    j_.Raw(", \"device\": ");
    j_.Uint(device);
    j_.Raw(", \"context\": ");
    j_.Uint(context);
    j_.Raw(", \"stream\": ");
    j_.Uint(stream);
    j_.Raw(", \"correlation\": ");
    j_.Uint(corr);
    j_.Raw(", \"bytes\": ");
    j_.Uint(bytes);
    j_.Raw(", \"memory bandwidth (GB/s)\": ");
    if (end > start)
      j_.Double(BandwidthGBps(bytes, start, end));
    else
      j_.Raw("\"N/A\"");
    j_.Raw("}\n  }");
  }
  void Triple(uint32_t x, uint32_t y, uint32_t z) {
    j_.Uint(x);
    j_.Raw(", ");
    j_.Uint(y);
    j_.Raw(", ");
    j_.Uint(z);
  }
  void Flow(char ph, uint64_t id, uint64_t pid, uint64_t tid, uint64_t ts) {
    Flow(ph, "ac2g", id, pid, tid, ts);
  }
  // Kineto's flow events: cat and name are the flow type (ac2g, fwdbwd);
  // only the end names its binding point (the enclosing slice).
  void Flow(char ph, std::string_view type, uint64_t id, uint64_t pid, uint64_t tid, uint64_t ts) {
    Sep();
    j_.Raw(ph == 's' ? "{\n    \"ph\": \"s\", \"id\": " : "{\n    \"ph\": \"f\", \"id\": ");
    j_.Uint(id);
    j_.Raw(", \"pid\": ");
    j_.Uint(pid);
    j_.Raw(", \"tid\": ");
    j_.Uint(tid);
    j_.Raw(", \"ts\": ");
    j_.Micros(ts - base_);
    j_.Raw(",\n    \"cat\": \"");
    j_.Raw(type);
    j_.Raw("\", \"name\": \"");
    j_.Raw(type);
    j_.Raw(ph == 's' ? "\"\n  }" : "\", \"bp\": \"e\"\n  }");
  }
  // The args torch writes on a CPU-side range, in torch's order (imported
  // traces keep them: NvtxRangeEvent::kineto_args says which).
  void KinetoOpArgs(const NvtxRangeEvent& r) {
    bool first = true;
    auto key = [&](const char* k) {
      j_.Raw(first ? ",\n    \"args\": {\"" : ", \"");
      j_.Raw(k);
      j_.Raw("\": ");
      first = false;
    };
    if (r.kineto_args & kKinetoExternalId) {
      key("External id");
      j_.Uint(r.external_id);
    }
    if (r.kineto_args & kKinetoOpArgs) {
      key("Record function id");
      j_.Uint(r.record_function_id);
    }
    if (r.kineto_args & kKinetoSequence) {
      key("Sequence number");
      j_.Int(r.sequence_number);
      key("Fwd thread id");
      j_.Uint(r.fwd_thread_id);
    }
    if (r.kineto_args & kKinetoOpArgs) {
      key("Ev Idx");
      j_.Uint(r.ev_idx);
    }
    if (!first) j_.Raw("}");
  }
  // The first GPU op of a linked correlation ends the launch's flow.
  void FlowEnd(uint32_t pid, uint32_t corr, uint32_t device, uint32_t stream, uint64_t ts) {
    uint64_t flow_id;
    if (flows_tracker_.EndAtGpuOp(*ctx_, pid, corr, &flow_id))
      Flow('f', flow_id, device, stream, ts);
  }
  // The args from "registers per thread" to the end depend only on the
  // launch configuration and device, and kernels repeat a few of those: the
  // text (with its double formatting) is built once per configuration.
  const std::string& LaunchArgs(const KernelEvent& k) {
    LaunchKey key{{k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
                   k.registers_per_thread, k.static_shared_bytes + k.dynamic_shared_bytes,
                   k.device_id}};
    uint64_t h = 0;
    for (uint32_t v : key.v) h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    auto& slot = launch_cache_[(h >> 40) & 63];
    if (slot.first == key && slot.second != nullptr) return *slot.second;
    auto [it, inserted] = launch_args_.try_emplace(key);
    if (inserted) {
      JsonBuffer w;
      w.Raw(", \"registers per thread\": ");
      w.Uint(k.registers_per_thread);
      w.Raw(", \"shared memory\": ");
      w.Uint(uint64_t{k.static_shared_bytes} + k.dynamic_shared_bytes);
      const Device* d = DeviceOf(k.device_id);
      OccupancyEstimate occ =
          d ? EstimateOccupancy(k, d->sm_count, d->cc_major, d->cc_minor) : OccupancyEstimate{};
      w.Raw(", \"blocks per SM\": ");
      w.Double(occ.blocks_per_sm);
      w.Raw(", \"warps per SM\": ");
      w.Double(occ.warps_per_sm);
      w.Raw(", \"grid\": [");
      w.Uint(k.grid_x);
      w.Raw(", ");
      w.Uint(k.grid_y);
      w.Raw(", ");
      w.Uint(k.grid_z);
      w.Raw("], \"block\": [");
      w.Uint(k.block_x);
      w.Raw(", ");
      w.Uint(k.block_y);
      w.Raw(", ");
      w.Uint(k.block_z);
      w.Raw("], \"est. achieved occupancy %\": ");
      w.Int(occ.occupancy_pct);
      w.Raw("}\n  }");
      it->second = std::string(w.view());
    }
    slot = {key, &it->second};
    return it->second;
  }
  // Escaped, quoted kernel names by string id.
  // The cache is sized by the string table, not by ids the file claims: an
  // id past the table (a damaged or forged trace) names nothing.
  // An argument text as a JSON object: itself when it is one (tracesmith.instant's
  // are), else {"args": "<text>"} (app.h takes any text).
  std::string ArgsObject(uint32_t id) {
    std::string_view text = meta_->strings.Get(id);
    if (nlohmann::json::accept(text)) {
      size_t at = text.find_first_not_of(" \t\r\n");
      if (at != std::string_view::npos && text[at] == '{') return std::string(text);
    }
    return "{\"args\": " + Quoted(text) + "}";
  }
  std::string_view QuotedName(uint32_t id) {
    if (id >= meta_->strings.size()) return "\"\"";
    if (id >= quoted_names_.size()) quoted_names_.resize(size_t{id} + 1);
    std::string& q = quoted_names_[id];
    if (q.empty()) {
      q.push_back('"');
      JsonBuffer::Escape(meta_->strings.Get(id), &q);
      q.push_back('"');
    }
    return q;
  }
  const Device* DeviceOf(uint32_t id) {
    auto it = devices_.find(id);
    return it == devices_.end() ? nullptr : &it->second;
  }
  void MaybeFlush() {
    if (j_.size() >= (256u << 10)) (void)Flush();
  }
  Status Flush() {
    out_->Write(j_.view());
    j_.Clear();
    return OkStatus();
  }

  OutputFile* out_;
  const ExportContext* ctx_ = nullptr;
  const Trace* meta_ = nullptr;
  uint64_t base_ = 0;
  JsonBuffer j_;
  bool first_event_ = true;
  std::map<uint32_t, Device> devices_;
  struct LaunchKey {
    uint32_t v[9];
    bool operator==(const LaunchKey&) const = default;
  };
  struct LaunchKeyHash {
    size_t operator()(const LaunchKey& k) const {
      uint64_t h = 0;
      for (uint32_t v : k.v) h = (h ^ v) * 0x9e3779b97f4a7c15ull;
      return h ^ (h >> 32);
    }
  };
  std::unordered_map<LaunchKey, std::string, LaunchKeyHash> launch_args_;
  std::array<std::pair<LaunchKey, const std::string*>, 64> launch_cache_{};
  std::vector<std::string> quoted_names_;
  std::unordered_map<uint32_t, std::string> derived_names_;  // memcpy/memset names, quoted
  KinetoCollectiveArgs collectives_;  // NCCL kernels' collective args (NCCL's payloads)
  analysis::LiveMemory live_;
  std::map<analysis::MemoryKey, uint64_t> counter_bytes_;  // last "C" value written per key
  // The thread of recent launch/API calls by correlation id, for the
  // [memory] event of the allocation a call made (it follows its call).
  struct CallThread {
    uint32_t pid = 0, corr = 0, tid = 0;
  };
  std::array<CallThread, 4096> call_threads_{};
  std::vector<IdMap> external_ids_;  // [pid index]: correlation id -> external id
  FlowTracker flows_tracker_;
  std::unordered_set<uint32_t> fwdbwd_started_;  // fwdbwd flow ids whose start was written
  uint64_t kernels_ = 0, flows_ = 0;
  KinetoDerived derived_;                         // steps, GPU annotations, launch external ids
  std::unique_ptr<PythonFunctionSlices> python_;  // python_function from launch stacks
  std::unique_ptr<PythonFunctionSlices> ops_;     // cpu_op (aten, autograd) from launch stacks
};

}  // namespace

std::unique_ptr<EventSink> MakeJsonSink(OutputFile* out) { return std::make_unique<JsonSink>(out); }

}  // namespace tracesmith::exporter
