// SQLite in the layout of `nsys export --type sqlite`: the same table and
// column names (StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS,
// TARGET_INFO_GPU, ...) and encodings (globalPid = pid << 24, globalTid =
// globalPid + tid, names as StringIds ids, times in ns from the session start,
// NVTX domains as NvtxDomainCreate rows), so SQL written for nsys exports
// (nsys stats reports, recipes, notebooks) runs unchanged. sqlite_schema.h
// holds the schema; docs/export.md lists every column and where it comes from.
#include <sqlite3.h>
#include <strings.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "kernel_samples.h"
#include "sinks.h"
#include "sqlite_schema.h"
#include "tracesmith/memory/memory_model.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::exporter {
namespace {

using namespace model;

using namespace sqlite;

#ifndef TS_VERSION
#define TS_VERSION "dev"
#endif

// nsys' serialized global ids: pid and tid 24 bits each (Linux pids stay
// below 2^22); a globalTid whose tid is 0 names the process itself.
int64_t GlobalPid(uint32_t pid) { return static_cast<int64_t>(pid & 0xffffff) << 24; }
int64_t GlobalTid(uint32_t pid, uint32_t tid) { return GlobalPid(pid) + (tid & 0xffffff); }

// nsys' shortName: the bare function name ("void ns::k<int>(float*)" -> "k",
// also "void at::native::(anonymous namespace)::k<...>(...)" -> "k"). The
// parameter list is the first '(' outside template arguments, lambda braces
// and "(anonymous namespace)".
constexpr std::string_view kAnonymousNamespace = "(anonymous namespace)";

std::string ShortKernelName(std::string_view full) {
  int depth = 0;
  size_t name_end = full.size();
  for (size_t i = 0; i < full.size(); ++i) {
    char c = full[i];
    if (c == '<' || c == '{') {
      ++depth;
    } else if (c == '>' || c == '}') {
      --depth;
    } else if (c == '(' && depth == 0) {
      if (full.compare(i, kAnonymousNamespace.size(), kAnonymousNamespace) == 0) {
        i += kAnonymousNamespace.size() - 1;
        continue;
      }
      name_end = i;
      break;
    }
  }
  std::string out;
  depth = 0;
  for (size_t i = 0; i < name_end; ++i) {  // drop template arguments
    char c = full[i];
    if (c == '<')
      ++depth;
    else if (c == '>')
      --depth;
    else if (depth == 0)
      out.push_back(c);
  }
  // Drop namespaces and classes ("(anonymous namespace)" among them), then
  // the return type.
  size_t colons = out.rfind("::");
  if (colons != std::string::npos) out.erase(0, colons + 2);
  size_t space = out.rfind(' ');
  if (space != std::string::npos) out.erase(0, space + 1);
  return out.empty() ? std::string(full) : out;
}

// How an NVTX domain's events are written. Kineto (torch.profiler) traces
// brought in by `import` keep their categories as domains: its GPU-side
// annotations ("gpu_user_annotation": a CPU range's span on a stream, pid =
// device, tid = stream) are not ranges of a host thread, and its "overhead"
// events are CUPTI's own time.
enum class DomainKind : uint8_t { kHost, kGpu, kOverhead };
constexpr std::string_view kGpuAnnotationDomain = "gpu_user_annotation";
constexpr std::string_view kOverheadDomain = "overhead";

class SqliteSink : public EventSink {
 public:
  explicit SqliteSink(std::string path) : path_(std::move(path)) {}
  ~SqliteSink() override {
    for (auto* s : stmts_) sqlite3_finalize(s);
    if (db_) sqlite3_close(db_);
  }

  Status Begin(const ExportContext& ctx) override {
    meta_ = ctx.meta;
    pc_samples_ = &ctx.pc_samples;
    // nsys timestamps count from the session start; TARGET_INFO_SESSION_START_TIME
    // gives that start in UTC. The session starts at the trace's first event.
    base_ = ctx.min_ts;
    // `path_` is a new, empty temporary file (export.cc renames it into
    // place when the export succeeds): SQLite starts a fresh database in it.
    if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK)
      return IoError(StrFormat("cannot create SQLite database %s: %s", path_.c_str(),
                               db_ ? sqlite3_errmsg(db_) : "out of memory"));
    RETURN_IF_ERROR(Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"));
    RETURN_IF_ERROR(Exec(kSchema));
    RETURN_IF_ERROR(Exec(kEnumRows));
    RETURN_IF_ERROR(Prepare());
    if (!pc_samples_->empty()) {
      RETURN_IF_ERROR(Exec(kPcSampleSchema));
      RETURN_IF_ERROR(Prepare(&ins_pc_function_,
                              "INSERT INTO TRACESMITH_PC_FUNCTIONS VALUES (?,?,?,?,?,?,?,?,?,?)"));
      RETURN_IF_ERROR(Prepare(&ins_pc_sample_,
                              "INSERT INTO TRACESMITH_PC_SAMPLES VALUES (?,?,?,?,?,?,?,?,?,?)"));
    }
    if (!meta_->Rows<GpuMetric>().empty()) {
      RETURN_IF_ERROR(Exec(kGpuMetricSchema));
      RETURN_IF_ERROR(Prepare(&ins_gpu_metric_, "INSERT INTO GPU_METRICS VALUES (?,?,?,?,?,?)"));
      RETURN_IF_ERROR(Prepare(&ins_gpu_metric_info_,
                              "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?,?,?,?,?,?,?,?)"));
      for (const GpuMetric& m : meta_->Rows<GpuMetric>()) metric_pids_.insert(m.pid);
    }
    // Trace strings keep their ids; names made here are appended after them.
    next_string_id_ = std::max<uint32_t>(meta_->strings.size(), 1);
    for (uint32_t id = 1; id < meta_->strings.size(); ++id)
      if (meta_->strings.Has(id)) InsertString(id, meta_->strings.Get(id));
    RETURN_IF_ERROR(Session(ctx));
    for (const auto& d : meta_->Rows<Device>()) {
      Bind(ins_gpu_, d.device_id);
      BindText(ins_gpu_, 2, Text(d.name_id));
      char bus[32];
      std::snprintf(bus, sizeof bus, "%04x:%02x:00.0", (d.pci_bus_id >> 8) & 0xffff,
                    d.pci_bus_id & 0xff);
      sqlite3_bind_text(ins_gpu_, 3, bus, -1, SQLITE_TRANSIENT);
      BindFrom(ins_gpu_, 4, 1, d.l2_cache_bytes, static_cast<int64_t>(d.memory_bytes),
               static_cast<int64_t>(uint64_t{d.memory_clock_khz} * 1000 * 2 *
                                    d.memory_bus_width_bits / 8),
               static_cast<int64_t>(uint64_t{d.core_clock_khz} * 1000), d.sm_count);
      BindText(ins_gpu_, 10, Text(d.uuid_id));
      BindFrom(ins_gpu_, 11, d.cc_major, d.cc_minor, d.max_threads_per_block,
               d.max_registers_per_block, d.max_shared_per_block);
      RETURN_IF_ERROR(Step(ins_gpu_));
    }
    for (const auto& p : meta_->Rows<Process>()) {
      Bind(ins_process_, GlobalPid(p.pid), p.pid);
      BindText(ins_process_, 3, Text(p.name_id));
      RETURN_IF_ERROR(Step(ins_process_));
      processes_.insert(p.pid);
    }
    for (const auto& t : meta_->Rows<Thread>()) {
      Bind(ins_thread_, t.name_id, 0, GlobalTid(t.pid, t.tid));
      RETURN_IF_ERROR(Step(ins_thread_));
    }
    return OkStatus();
  }

  void On(const KernelEvent& k) override {
    uint32_t full = k.demangled_id ? k.demangled_id : k.name_id;
    Bind(ins_kernel_, Rel(k.start_ns), Rel(k.end_ns), k.device_id, k.context_id, k.stream_id,
         k.correlation_id, GlobalPid(k.pid), full, ShortName(full), k.name_id, k.launch_type, 0,
         k.registers_per_thread, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
         k.cluster_x, k.cluster_y, k.cluster_z, k.static_shared_bytes, k.dynamic_shared_bytes,
         k.local_bytes_per_thread, 0, 0, 0, static_cast<int64_t>(k.graph_node_id), k.graph_id);
    Record(Step(ins_kernel_));
    NoteStream(k.pid, k.context_id, k.stream_id);
    ++kernels_;
  }
  void On(const ApiEvent& a) override {
    Bind(ins_runtime_, Rel(a.start_ns), Rel(a.end_ns),
         a.domain == kApiDriver ? kEventClassDriver : kEventClassRuntime, GlobalTid(a.pid, a.tid),
         a.correlation_id, a.name_id, a.return_code, a.stack_id);
    Record(Step(ins_runtime_));
  }
  void On(const MemcpyEvent& m) override {
    Bind(ins_memcpy_, Rel(m.start_ns), Rel(m.end_ns), m.device_id, m.context_id, m.stream_id,
         m.correlation_id, GlobalPid(m.pid), static_cast<int64_t>(m.bytes), m.copy_kind, 0,
         NsysMemoryKind(m.src_kind), NsysMemoryKind(m.dst_kind), m.src_device_id, 0,
         m.dst_device_id, 0, 0, static_cast<int64_t>(m.graph_node_id), 0);
    Record(Step(ins_memcpy_));
    NoteStream(m.pid, m.context_id, m.stream_id);
  }
  void On(const MemsetEvent& m) override {
    Bind(ins_memset_, Rel(m.start_ns), Rel(m.end_ns), m.device_id, m.context_id, m.stream_id,
         m.correlation_id, GlobalPid(m.pid), m.value, static_cast<int64_t>(m.bytes),
         static_cast<int64_t>(m.graph_node_id), NsysMemoryKind(m.memory_kind));
    Record(Step(ins_memset_));
    NoteStream(m.pid, m.context_id, m.stream_id);
  }
  void On(const SyncEvent& e) override {
    Bind(ins_sync_, Rel(e.start_ns), Rel(e.end_ns), e.device_id, e.context_id, e.stream_id,
         e.correlation_id, GlobalPid(e.pid), e.sync_type, e.event_id);
    Record(Step(ins_sync_));
  }
  // nsys' memory usage rows: allocations (0) and frees (1) of memory, in
  // CUPTI's MEMORY2 meaning, through the live-memory model. A free's bytes
  // are its allocation's (a free row often has none); a free of memory
  // allocated before the capture keeps its own (0 when unknown); a matched
  // free also takes its allocation's device and memory kind. VMM physical
  // memory (cuMemCreate / cuMemRelease) is memory in use too: written as an
  // allocation / free whose address is the allocation handle. Mappings,
  // address reservations and IPC imports use no memory of this process
  // (mapped memory is counted at its cuMemCreate): no rows.
  void On(const MemoryEvent& m) override {
    const analysis::MemoryChange c = live_.Apply(m);
    int operation;
    uint64_t bytes = m.bytes;
    uint32_t device = m.device_id;
    uint8_t kind = m.memory_kind;
    switch (m.op) {
      case kMemoryAlloc:
      case kMemoryVmmCreate:
        operation = 0;
        break;
      case kMemoryFree:
      case kMemoryVmmRelease:
        operation = 1;
        if (c.kind == analysis::MemoryChange::kFree) {  // the allocation's size, device, kind
          bytes = c.alloc.bytes;
          device = c.key.device_id;
          kind = c.alloc.memory_kind;
        }
        break;
      default:
        return;
    }
    Bind(ins_memory_, Rel(m.ts_ns), GlobalPid(m.pid), device, m.context_id,
         static_cast<int64_t>(m.address), 0, static_cast<int64_t>(bytes), NsysMemoryKind(kind),
         operation);
    sqlite3_bind_null(ins_memory_, 10);
    BindFrom(ins_memory_, 11, m.correlation_id, m.stream_id);
    Record(Step(ins_memory_));
  }
  void On(const NvtxRangeEvent& r) override {
    const Domain& d = DomainOf(r.domain_id, r.start_ns, r.pid, r.tid);
    if (d.kind == DomainKind::kOverhead) {
      Overhead(r.start_ns, r.end_ns, OverheadTid(r.pid, r.tid), r.name_id,
               OverheadTypeOfName(r.name_id));
      return;
    }
    // Host ranges nest per thread (push/pop); a GPU-side annotation has no
    // host thread, so it is a start/end range of its own domain.
    bool host = d.kind == DomainKind::kHost;
    Bind(ins_nvtx_, Rel(r.start_ns), Rel(r.end_ns), host ? kNvtxPushPop : kNvtxStartEnd,
         static_cast<int64_t>(r.range_id), r.category, r.color);
    sqlite3_bind_null(ins_nvtx_, 7);
    BindTidOrNull(ins_nvtx_, 8, host, GlobalTid(r.pid, r.tid));
    BindTidOrNull(ins_nvtx_, 9, host, GlobalTid(r.pid, r.tid));
    BindFrom(ins_nvtx_, 10, r.name_id, d.id);
    Record(Step(ins_nvtx_));
  }
  void On(const NvtxMarkerEvent& m) override {
    const Domain& d = DomainOf(m.domain_id, m.ts_ns, m.pid, m.tid);
    bool host = d.kind == DomainKind::kHost;
    Bind(ins_nvtx_, Rel(m.ts_ns));
    sqlite3_bind_null(ins_nvtx_, 2);
    BindFrom(ins_nvtx_, 3, kNvtxMark);
    sqlite3_bind_null(ins_nvtx_, 4);
    BindFrom(ins_nvtx_, 5, m.category, m.color);
    sqlite3_bind_null(ins_nvtx_, 7);
    BindTidOrNull(ins_nvtx_, 8, host, GlobalTid(m.pid, m.tid));
    BindTidOrNull(ins_nvtx_, 9, host, GlobalTid(m.pid, m.tid));
    BindFrom(ins_nvtx_, 10, m.name_id, d.id);
    Record(Step(ins_nvtx_));
  }
  // The program's own counters: TRACESMITH_APP_COUNTERS (kAppCounterSchema),
  // made at the first one. A value that is not finite (the capture rejects
  // them; a hand-made trace may not) has no row: value is NOT NULL and SQLite
  // stores NaN as NULL.
  void On(const AppCounterEvent& c) override {
    if (!std::isfinite(c.value)) return;
    if (!ins_app_counter_) {
      if (!status_.ok()) return;
      Record(Exec(kAppCounterSchema));
      Record(Prepare(&ins_app_counter_, "INSERT INTO TRACESMITH_APP_COUNTERS VALUES (?,?,?,?)"));
      if (!ins_app_counter_) return;
    }
    Bind(ins_app_counter_, Rel(c.ts_ns), GlobalTid(c.pid, c.tid), c.name_id);
    sqlite3_bind_double(ins_app_counter_, 4, c.value);
    Record(Step(ins_app_counter_));
  }
  // The program's own ranges and instants (tracesmith.range / instant) as NVTX
  // push/pop ranges and marks of the default domain on their thread.
  void On(const AppEvent& e) override {
    const Domain& d = DomainOf(0, e.start_ns, e.pid, e.tid);
    const bool mark = e.kind == kAppInstant;
    Bind(ins_nvtx_, Rel(e.start_ns));
    if (mark)
      sqlite3_bind_null(ins_nvtx_, 2);
    else
      BindFrom(ins_nvtx_, 2, Rel(std::max(e.start_ns, e.end_ns)));
    BindFrom(ins_nvtx_, 3, mark ? kNvtxMark : kNvtxPushPop);
    for (int i : {4, 5, 6, 7}) sqlite3_bind_null(ins_nvtx_, i);
    BindTidOrNull(ins_nvtx_, 8, true, GlobalTid(e.pid, e.tid));
    BindTidOrNull(ins_nvtx_, 9, true, GlobalTid(e.pid, e.tid));
    BindFrom(ins_nvtx_, 10, e.name_id, d.id);
    Record(Step(ins_nvtx_));
  }
  void On(const OverheadEvent& o) override {
    // tid 0: CUPTI attributed the overhead to a device, not a thread; the
    // row goes to the process (globalTid with tid 0, as nsys' globalPid).
    Overhead(o.start_ns, o.end_ns, GlobalTid(o.pid, o.tid), 0, NsysOverheadType(o.overhead_kind));
  }

  void On(const GpuMetricSample& m) override {
    if (!ins_gpu_metric_) return;  // no GpuMetric row names it: not a metric of the trace
    // An interval where CUPTI's evaluation has no value (NaN, seen on the H200:
    // a ratio over an interval without its denominator): no row, as nsys
    // writes none (GPU_METRICS.value is NOT NULL, and SQLite stores NaN as NULL).
    if (!std::isfinite(m.value)) return;
    const int64_t type = TypeId(m.pid, m.device_id);
    metric_types_.insert({m.pid, m.device_id, m.metric_id});
    Bind(ins_gpu_metric_, Rel(m.start_ns), type, m.metric_id);
    sqlite3_bind_double(ins_gpu_metric_, 4, m.value);
    BindFrom(ins_gpu_metric_, 5, Rel(std::max(m.start_ns, m.end_ns)), GlobalPid(m.pid));
    Record(Step(ins_gpu_metric_));
  }

  Status Finish(ExportStats* stats) override {
    RETURN_IF_ERROR(status_);
    RETURN_IF_ERROR(GpuMetricInfo());
    // Streams in (process, context, stream) order: TARGET_INFO_CUDA_STREAM.
    // Priority and type (flag) are not captured: NULL.
    for (const auto& [pid, context, stream] : streams_) {
      Bind(ins_stream_, stream);
      sqlite3_bind_null(ins_stream_, 2);
      sqlite3_bind_null(ins_stream_, 3);
      BindFrom(ins_stream_, 4, pid, context);
      sqlite3_bind_null(ins_stream_, 6);
      sqlite3_bind_null(ins_stream_, 7);
      RETURN_IF_ERROR(Step(ins_stream_));
    }
    RETURN_IF_ERROR(PcSampleTables());
    RETURN_IF_ERROR(Exec(kIndexes));
    RETURN_IF_ERROR(Exec("COMMIT;"));
    stats->kernel_events = kernels_;
    for (auto* s : stmts_) sqlite3_finalize(s);
    stmts_.clear();
    if (sqlite3_close(db_) != SQLITE_OK) return IoError("closing " + path_ + " failed");
    db_ = nullptr;
    return OkStatus();
  }

 private:
  struct Domain {
    int64_t id = 0;  // NVTX_EVENTS.domainId: 0 the default domain, then 1, 2, ...
    DomainKind kind = DomainKind::kHost;
  };

  // Nanoseconds since the session start (the trace's first event).
  int64_t Rel(uint64_t ts) const { return static_cast<int64_t>(ts) - static_cast<int64_t>(base_); }
  std::string_view Text(uint32_t id) const { return meta_->strings.Get(id); }

  // EXPORT_META_DATA / META_DATA_EXPORT (nsys' older and newer name for the
  // same key/value table), ANALYSIS_DETAILS and TARGET_INFO_SESSION_START_TIME.
  Status Session(const ExportContext& ctx) {
    const std::pair<const char*, const char*> meta[] = {
        {"EXPORT_PRODUCT_NAME", "TraceSmith"},
        {"EXPORT_PRODUCT_VERSION", TS_VERSION},
        // The nsys export schema whose table and column names this follows
        // (only the tables listed in docs/export.md exist).
        {"EXPORT_SCHEMA_VERSION", "3.16.1"},
        {"EXPORT_TIMESTAMP_UNIT", "ns since session start"},
    };
    for (const char* table : {"EXPORT_META_DATA", "META_DATA_EXPORT"}) {
      for (const auto& [name, value] : meta) {
        char* sql = sqlite3_mprintf("INSERT INTO %s VALUES (%Q, %Q)", table, name, value);
        Status s = Exec(sql);
        sqlite3_free(sql);
        RETURN_IF_ERROR(s);
      }
    }
    const int64_t duration = ctx.max_ts > ctx.min_ts ? Rel(ctx.max_ts) : 0;
    char* sql = sqlite3_mprintf("INSERT INTO ANALYSIS_DETAILS VALUES (0, %lld, 0, %lld)",
                                static_cast<long long>(duration), static_cast<long long>(duration));
    Status s = Exec(sql);
    sqlite3_free(sql);
    RETURN_IF_ERROR(s);
    // UTC of the session start: through the first clock anchor (capture
    // clock -> CLOCK_REALTIME); without one the capture clock is taken to
    // be UTC already (CUPTI's default on Linux, Kineto's epoch times).
    int64_t utc = static_cast<int64_t>(base_);
    for (const auto& a : meta_->Rows<ClockAnchor>()) {
      if (a.realtime_ns == 0 || a.gpu_ns == 0) continue;
      utc = static_cast<int64_t>(a.realtime_ns) - Rel(a.gpu_ns);  // realtime at base_
      break;
    }
    char utc_text[64] = "", local_text[64] = "";
    std::time_t secs = static_cast<std::time_t>(utc / 1000000000);
    std::tm tm{};
    if (gmtime_r(&secs, &tm)) std::strftime(utc_text, sizeof utc_text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (localtime_r(&secs, &tm))
      std::strftime(local_text, sizeof local_text, "%Y-%m-%dT%H:%M:%S%z", &tm);
    sql = sqlite3_mprintf("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (%lld, %Q, %Q)",
                          static_cast<long long>(utc), utc_text, local_text);
    s = Exec(sql);
    sqlite3_free(sql);
    return s;
  }

  // The domain of an NVTX event, numbered on first use; a named domain gets
  // its NvtxDomainCreate row then (text = its name), as nsys stores domains.
  const Domain& DomainOf(uint32_t domain_string, uint64_t ts, uint32_t pid, uint32_t tid) {
    if (domain_string == last_domain_string_ && last_domain_ != nullptr) return *last_domain_;
    auto [it, inserted] = domains_.try_emplace(domain_string);
    if (inserted) {
      std::string_view name = Text(domain_string);
      Domain& d = it->second;
      d.kind = name == kGpuAnnotationDomain ? DomainKind::kGpu
               : name == kOverheadDomain    ? DomainKind::kOverhead
                                            : DomainKind::kHost;
      if (!name.empty() && d.kind != DomainKind::kOverhead) {
        d.id = ++named_domains_;
        Bind(ins_nvtx_, Rel(ts));
        sqlite3_bind_null(ins_nvtx_, 2);
        BindFrom(ins_nvtx_, 3, kNvtxDomainCreate);
        for (int i : {4, 5, 6}) sqlite3_bind_null(ins_nvtx_, i);
        BindText(ins_nvtx_, 7, name);
        bool host = d.kind == DomainKind::kHost;
        BindTidOrNull(ins_nvtx_, 8, host, GlobalTid(pid, tid));
        sqlite3_bind_null(ins_nvtx_, 9);
        sqlite3_bind_null(ins_nvtx_, 10);
        BindFrom(ins_nvtx_, 11, d.id);
        Record(Step(ins_nvtx_));
      }
    }
    last_domain_string_ = domain_string;
    last_domain_ = &it->second;
    return it->second;
  }

  // globalTid of an imported overhead event: its thread when its process is
  // in the trace; Kineto writes pid -1 (no process), so a trace of one
  // process gets that process (tid 0), otherwise NULL (-1 here).
  int64_t OverheadTid(uint32_t pid, uint32_t tid) const {
    if (processes_.count(pid)) return GlobalTid(pid, tid);
    if (processes_.size() == 1) return GlobalPid(*processes_.begin());
    return -1;
  }
  // An imported overhead event's type from its name ("Activity Buffer
  // Request" -> 9); 1 (unknown) when no label matches.
  int OverheadTypeOfName(uint32_t name_id) const {
    std::string_view name = Text(name_id);
    for (int i = 1; i < static_cast<int>(std::size(kOverheadLabels)); ++i) {
      std::string_view label = kOverheadLabels[i];
      if (label.size() == name.size() && strncasecmp(label.data(), name.data(), name.size()) == 0)
        return i;
    }
    return 1;
  }
  // One PROFILER_OVERHEAD row; name_id 0: the label of its type.
  void Overhead(uint64_t start, uint64_t end, int64_t gtid, uint32_t name_id, int type) {
    if (name_id == 0) name_id = LocalString(kOverheadLabels[type]);
    Bind(ins_overhead_, Rel(start), Rel(end));
    BindTidOrNull(ins_overhead_, 3, gtid >= 0, gtid);
    BindFrom(ins_overhead_, 4, name_id, 0, type);
    Record(Step(ins_overhead_));
  }

  void NoteStream(uint32_t pid, uint32_t context, uint32_t stream) {
    auto key = std::make_tuple(pid, context, stream);
    if (key == last_stream_) return;
    last_stream_ = key;
    streams_.insert(key);
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      return IoError(StrFormat("SQLite %s: %s", path_.c_str(), msg.c_str()));
    }
    return OkStatus();
  }
  Status Prepare() {
    struct {
      sqlite3_stmt** stmt;
      const char* sql;
    } list[] = {
        {&ins_string_, "INSERT INTO StringIds VALUES (?,?)"},
        {&ins_gpu_, "INSERT INTO TARGET_INFO_GPU VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&ins_stream_, "INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (?,?,?,?,?,?,?)"},
        {&ins_process_, "INSERT INTO PROCESSES VALUES (?,?,?)"},
        {&ins_thread_, "INSERT INTO ThreadNames VALUES (?,?,?)"},
        {&ins_kernel_,
         "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
         "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&ins_runtime_, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)"},
        {&ins_memcpy_,
         "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES "
         "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&ins_memset_, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,?,?,?,?,?,?,?,?)"},
        {&ins_sync_, "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?,?,?,?,?,?,?,?,?)"},
        {&ins_memory_, "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&ins_nvtx_,
         "INSERT INTO NVTX_EVENTS (start,end,eventType,rangeId,category,color,text,"
         "globalTid,endGlobalTid,textId,domainId) VALUES (?,?,?,?,?,?,?,?,?,?,?)"},
        {&ins_overhead_, "INSERT INTO PROFILER_OVERHEAD VALUES (?,?,?,?,?,?)"},
    };
    for (auto& s : list) RETURN_IF_ERROR(Prepare(s.stmt, s.sql));
    return OkStatus();
  }
  Status Prepare(sqlite3_stmt** stmt, const char* sql) {
    if (sqlite3_prepare_v2(db_, sql, -1, stmt, nullptr) != SQLITE_OK)
      return Internal(StrFormat("SQLite prepare failed: %s (%s)", sqlite3_errmsg(db_), sql));
    stmts_.push_back(*stmt);
    return OkStatus();
  }

  // GPU_METRICS.typeId: the process's index among those with metrics, and the device.
  int64_t TypeId(uint32_t pid, uint32_t device) const {
    auto it = metric_pids_.find(pid);
    const int64_t index = it == metric_pids_.end() ? 0 : std::distance(metric_pids_.begin(), it);
    return index << 8 | (device & 0xff);
  }
  // TARGET_INFO_GPU_METRICS: a row per (process, device, metric) sampled.
  Status GpuMetricInfo() {
    for (const auto& [pid, device, id] : metric_types_) {
      const GpuMetric* m = FindGpuMetric(*meta_, pid, id);
      if (!m) continue;
      std::string type = "GPU " + std::to_string(device);
      for (const Device& d : meta_->Rows<Device>())
        if (d.pid == pid && d.device_id == device && d.name_id)
          type += " (" + std::string(Text(d.name_id)) + ")";
      const std::string_view cupti = Text(m->name_id), unit = Text(m->unit_id);
      std::string name(m->label_id ? Text(m->label_id) : cupti);
      if (!unit.empty()) name += " [" + std::string(unit) + "]";
      BindFrom(ins_gpu_metric_info_, 1, TypeId(pid, device), device);
      BindText(ins_gpu_metric_info_, 3, type);
      BindFrom(ins_gpu_metric_info_, 4, id);
      BindText(ins_gpu_metric_info_, 5, name);
      BindText(ins_gpu_metric_info_, 6, cupti);
      if (unit.empty())
        sqlite3_bind_null(ins_gpu_metric_info_, 7);
      else
        BindText(ins_gpu_metric_info_, 7, unit);
      BindFrom(ins_gpu_metric_info_, 8, GlobalPid(pid));
      RETURN_IF_ERROR(Step(ins_gpu_metric_info_));
    }
    return OkStatus();
  }

  // TRACESMITH_PC_FUNCTIONS and TRACESMITH_PC_SAMPLES (sqlite_schema.h).
  Status PcSampleTables() {
    if (pc_samples_->empty()) return OkStatus();
    const KernelSamples summary(*pc_samples_, *meta_);
    for (const analysis::FunctionSamples& f : summary.functions()) {
      Bind(ins_pc_function_, GlobalPid(f.pid), f.function_id, f.name_id,
           static_cast<int64_t>(f.samples));
      sqlite3_bind_double(ins_pc_function_, 5, f.share);
      BindIdOrNull(ins_pc_function_, 6, f.stalls.empty() ? 0 : SampleStringId(f.stalls[0].reason));
      BindRealOrNull(ins_pc_function_, 7, !f.stalls.empty(),
                     f.stalls.empty() ? 0 : f.stalls[0].share);
      const analysis::LineShare* hot = f.lines.empty() ? nullptr : &f.lines[0];
      BindIdOrNull(ins_pc_function_, 8, hot && !hot->file.empty() ? SampleStringId(hot->file) : 0);
      BindIdOrNull(ins_pc_function_, 9, hot && !hot->file.empty() ? hot->line : 0);
      BindRealOrNull(ins_pc_function_, 10, hot != nullptr, hot ? hot->share : 0);
      RETURN_IF_ERROR(Step(ins_pc_function_));
    }
    // Per (process, function, instruction, reason): counted samples, and the
    // reason's `_not_issued` subset beside them (never a row of its own, so
    // that SUM(samples) is the samples taken).
    struct Row {
      uint64_t samples = 0, not_issued = 0;
    };
    using Where = std::tuple<uint32_t, uint32_t, uint64_t, uint32_t, std::string_view>;
    std::map<Where, Row> rows;
    constexpr std::string_view kNotIssued = "_not_issued";
    for (const auto& [key, n] : pc_samples_->samples()) {
      std::string_view reason = Text(key.stall_id);
      const bool not_issued = reason.ends_with(kNotIssued);
      if (not_issued) reason.remove_suffix(kNotIssued.size());
      if (!IsCountedStall(reason)) continue;  // CUPTI's other counters
      Row& r = rows[{key.pid, key.function_id, key.cubin_crc, key.pc_offset, reason}];
      (not_issued ? r.not_issued : r.samples) += n;
    }
    const analysis::InstructionIndex index = analysis::IndexInstructions(*meta_);
    for (const auto& [where, r] : rows) {
      const auto& [pid, function, cubin, pc, reason] = where;
      const PcKey key = analysis::InstructionKey(cubin, pid, function, pc);
      const analysis::InstructionIndex::Line* line = index.LineOf(key);
      Bind(ins_pc_sample_, GlobalPid(pid), function, static_cast<int64_t>(cubin), pc,
           SampleStringId(reason), static_cast<int64_t>(r.samples),
           static_cast<int64_t>(r.not_issued));
      BindIdOrNull(ins_pc_sample_, 8, line ? line->file_id : 0);
      BindIdOrNull(ins_pc_sample_, 9, line && line->file_id ? line->line : 0);
      BindIdOrNull(ins_pc_sample_, 10, index.SassOf(key));
      RETURN_IF_ERROR(Step(ins_pc_sample_));
    }
    return OkStatus();
  }
  // The StringIds id of a stall reason or source file of the samples: the
  // trace's own (its PcSample and PcLine rows name them), else one made here.
  uint32_t SampleStringId(std::string_view text) {
    if (sample_strings_.empty()) {
      for (const auto& [key, n] : pc_samples_->samples())
        sample_strings_.try_emplace(Text(key.stall_id), key.stall_id);
      for (const PcLine& l : meta_->Rows<PcLine>())
        if (l.file_id) sample_strings_.try_emplace(Text(l.file_id), l.file_id);
    }
    auto it = sample_strings_.find(text);
    return it != sample_strings_.end() ? it->second : LocalString(std::string(text));
  }
  void InsertString(uint32_t id, std::string_view s) {
    sqlite3_bind_int64(ins_string_, 1, id);
    BindText(ins_string_, 2, s);
    Record(Step(ins_string_));
  }
  // A string made by the export (short names, overhead labels), once each.
  uint32_t LocalString(const std::string& s) {
    auto [it, inserted] = local_strings_.try_emplace(s, 0);
    if (inserted) {
      it->second = next_string_id_++;
      InsertString(it->second, s);
    }
    return it->second;
  }
  uint32_t ShortName(uint32_t full) {
    auto [it, inserted] = short_names_.try_emplace(full, 0);
    if (inserted) it->second = LocalString(ShortKernelName(Text(full)));
    return it->second;
  }
  static void BindText(sqlite3_stmt* s, int i, std::string_view text) {
    sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  // A string id or line, NULL when 0 (none).
  static void BindIdOrNull(sqlite3_stmt* s, int i, uint32_t id) {
    BindTidOrNull(s, i, id != 0, id);
  }
  static void BindRealOrNull(sqlite3_stmt* s, int i, bool present, double value) {
    if (present)
      sqlite3_bind_double(s, i, value);
    else
      sqlite3_bind_null(s, i);
  }
  static void BindTidOrNull(sqlite3_stmt* s, int i, bool present, int64_t value) {
    if (present)
      sqlite3_bind_int64(s, i, value);
    else
      sqlite3_bind_null(s, i);
  }
  template <typename... V>
  static void BindFrom(sqlite3_stmt* s, int first, V... values) {
    int i = first;
    (sqlite3_bind_int64(s, i++, static_cast<sqlite3_int64>(values)), ...);
  }
  template <typename... V>
  static void Bind(sqlite3_stmt* s, V... values) {
    BindFrom(s, 1, values...);
  }
  Status Step(sqlite3_stmt* s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
      return IoError(
          StrFormat("SQLite insert into %s failed: %s", path_.c_str(), sqlite3_errmsg(db_)));
    return OkStatus();
  }
  void Record(Status st) {
    if (status_.ok() && !st.ok()) status_ = std::move(st);
  }

  std::string path_;
  analysis::LiveMemory live_;
  const Trace* meta_ = nullptr;
  uint64_t base_ = 0;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
  sqlite3_stmt *ins_string_ = nullptr, *ins_gpu_ = nullptr, *ins_stream_ = nullptr,
               *ins_process_ = nullptr, *ins_thread_ = nullptr, *ins_kernel_ = nullptr,
               *ins_runtime_ = nullptr, *ins_memcpy_ = nullptr, *ins_memset_ = nullptr,
               *ins_sync_ = nullptr, *ins_memory_ = nullptr, *ins_nvtx_ = nullptr,
               *ins_overhead_ = nullptr, *ins_pc_function_ = nullptr, *ins_pc_sample_ = nullptr,
               *ins_gpu_metric_ = nullptr, *ins_gpu_metric_info_ = nullptr,
               *ins_app_counter_ = nullptr;
  std::set<uint32_t> metric_pids_;  // processes with GpuMetric rows
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> metric_types_;  // (pid, device, metric) seen
  using PcKey = analysis::PcSamples::Key;
  const analysis::PcSamples* pc_samples_ = nullptr;
  std::unordered_map<std::string_view, uint32_t> sample_strings_;  // text -> trace string id
  std::unordered_map<uint32_t, uint32_t> short_names_;
  std::unordered_map<std::string, uint32_t> local_strings_;
  std::unordered_map<uint32_t, Domain> domains_;  // node-based: last_domain_ stays valid
  uint32_t last_domain_string_ = 0;
  const Domain* last_domain_ = nullptr;
  int64_t named_domains_ = 0;
  std::set<uint32_t> processes_;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> streams_;
  std::tuple<uint32_t, uint32_t, uint32_t> last_stream_{UINT32_MAX, UINT32_MAX, UINT32_MAX};
  uint32_t next_string_id_ = 1;
  uint64_t kernels_ = 0;
  Status status_;
};

}  // namespace

std::unique_ptr<EventSink> MakeSqliteSink(const std::string& path) {
  return std::make_unique<SqliteSink>(path);
}

}  // namespace tracesmith::exporter
