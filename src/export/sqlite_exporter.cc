// SQLite in the layout of `nsys export --type sqlite`: the same table and
// column names (StringIds, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS,
// TARGET_INFO_GPU, ...) and encodings (globalPid = pid << 24, globalTid =
// globalPid + tid, names as StringIds ids), so SQL written for nsys exports
// (nsys stats recipes, notebooks) runs unchanged. docs/export.md lists every
// column and where it comes from.
#include <sqlite3.h>

#include <algorithm>
#include <unordered_map>

#include "sinks.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::exporter {
namespace {

using namespace model;

constexpr const char* kSchema = R"SQL(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT NOT NULL, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER,
  clockRate INTEGER, smCount INTEGER, uuid TEXT, computeMajor INTEGER, computeMinor INTEGER,
  maxThreadsPerBlock INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL REFERENCES StringIds(id), priority INTEGER,
  globalTid INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL REFERENCES StringIds(id),
  shortName INTEGER NOT NULL REFERENCES StringIds(id), mangledName INTEGER REFERENCES StringIds(id),
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  clusterX INTEGER, clusterY INTEGER, clusterZ INTEGER,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  graphId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL,
  callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
  graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER,
  deviceId INTEGER, contextId INTEGER, address INTEGER NOT NULL, pc INTEGER, bytes INTEGER NOT NULL,
  memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT,
  correlationId INTEGER, streamId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER REFERENCES StringIds(id), domainId INTEGER,
  uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_NVTX_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
)SQL";

constexpr const char* kIndexes = R"SQL(
CREATE INDEX idx_kernel_start ON CUPTI_ACTIVITY_KIND_KERNEL (start);
CREATE INDEX idx_kernel_corr ON CUPTI_ACTIVITY_KIND_KERNEL (correlationId);
CREATE INDEX idx_kernel_name ON CUPTI_ACTIVITY_KIND_KERNEL (shortName);
CREATE INDEX idx_runtime_corr ON CUPTI_ACTIVITY_KIND_RUNTIME (correlationId);
CREATE INDEX idx_runtime_tid_start ON CUPTI_ACTIVITY_KIND_RUNTIME (globalTid, start);
CREATE INDEX idx_memcpy_corr ON CUPTI_ACTIVITY_KIND_MEMCPY (correlationId);
CREATE INDEX idx_memset_corr ON CUPTI_ACTIVITY_KIND_MEMSET (correlationId);
CREATE INDEX idx_nvtx_start ON NVTX_EVENTS (start);
)SQL";

// nsys: NvtxPushPopRange = 59, NvtxStartEndRange = 60, NvtxMark = 34.
constexpr int kNvtxPushPop = 59, kNvtxMark = 34;
// nsys eventClass of CUDA runtime/driver rows (TRACE_PROCESS_EVENT_CUDA_RUNTIME / _DRIVER).
constexpr int kEventClassRuntime = 0, kEventClassDriver = 1;

int64_t GlobalPid(uint32_t pid) { return static_cast<int64_t>(pid) << 24; }
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

class SqliteSink : public EventSink {
 public:
  explicit SqliteSink(std::string path) : path_(std::move(path)) {}
  ~SqliteSink() override {
    for (auto* s : stmts_) sqlite3_finalize(s);
    if (db_) sqlite3_close(db_);
  }

  Status Begin(const ExportContext& ctx) override {
    meta_ = ctx.meta;
    // `path_` is a new, empty temporary file (export.cc renames it into
    // place when the export succeeds): SQLite starts a fresh database in it.
    if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK)
      return IoError(StrFormat("cannot create SQLite database %s: %s", path_.c_str(),
                               db_ ? sqlite3_errmsg(db_) : "out of memory"));
    RETURN_IF_ERROR(Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"));
    RETURN_IF_ERROR(Exec(kSchema));
    RETURN_IF_ERROR(Prepare());
    // Trace strings keep their ids; names made here are appended after them.
    next_string_id_ = std::max<uint32_t>(meta_->strings.size(), 1);
    for (uint32_t id = 1; id < meta_->strings.size(); ++id)
      if (meta_->strings.Has(id)) InsertString(id, meta_->strings.Get(id));
    for (const auto& d : meta_->Rows<Device>()) {
      Bind(ins_gpu_, d.device_id);
      sqlite3_bind_text(ins_gpu_, 2, Text(d.name_id).data(),
                        static_cast<int>(Text(d.name_id).size()), SQLITE_TRANSIENT);
      char bus[32];
      std::snprintf(bus, sizeof bus, "%04x:%02x:00.0", (d.pci_bus_id >> 8) & 0xffff,
                    d.pci_bus_id & 0xff);
      sqlite3_bind_text(ins_gpu_, 3, bus, -1, SQLITE_TRANSIENT);
      BindFrom(ins_gpu_, 4, 1, d.l2_cache_bytes, static_cast<int64_t>(d.memory_bytes),
               static_cast<int64_t>(uint64_t{d.memory_clock_khz} * 1000 * 2 *
                                    d.memory_bus_width_bits / 8),
               static_cast<int64_t>(uint64_t{d.core_clock_khz} * 1000), d.sm_count);
      std::string_view uuid = Text(d.uuid_id);
      sqlite3_bind_text(ins_gpu_, 10, uuid.data(), static_cast<int>(uuid.size()), SQLITE_TRANSIENT);
      BindFrom(ins_gpu_, 11, d.cc_major, d.cc_minor, d.max_threads_per_block,
               d.max_registers_per_block, d.max_shared_per_block);
      RETURN_IF_ERROR(Step(ins_gpu_));
    }
    for (const auto& p : meta_->Rows<Process>()) {
      Bind(ins_process_, GlobalPid(p.pid), p.pid);
      std::string_view name = Text(p.name_id);
      sqlite3_bind_text(ins_process_, 3, name.data(), static_cast<int>(name.size()),
                        SQLITE_TRANSIENT);
      RETURN_IF_ERROR(Step(ins_process_));
    }
    for (const auto& t : meta_->Rows<Thread>()) {
      Bind(ins_thread_, t.name_id, 0, GlobalTid(t.pid, t.tid));
      RETURN_IF_ERROR(Step(ins_thread_));
    }
    RETURN_IF_ERROR(Enums());
    return OkStatus();
  }

  void On(const KernelEvent& k) override {
    uint32_t full = k.demangled_id ? k.demangled_id : k.name_id;
    Bind(ins_kernel_, k.start_ns, k.end_ns, k.device_id, k.context_id, k.stream_id,
         k.correlation_id, GlobalPid(k.pid), full, ShortName(full), k.name_id, k.launch_type, 0,
         k.registers_per_thread, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
         k.cluster_x, k.cluster_y, k.cluster_z, k.static_shared_bytes, k.dynamic_shared_bytes,
         k.local_bytes_per_thread, 0, 0, 0, static_cast<int64_t>(k.graph_node_id), k.graph_id);
    Record(Step(ins_kernel_));
    ++kernels_;
  }
  void On(const ApiEvent& a) override {
    Bind(ins_runtime_, a.start_ns, a.end_ns,
         a.domain == kApiDriver ? kEventClassDriver : kEventClassRuntime, GlobalTid(a.pid, a.tid),
         a.correlation_id, a.name_id, a.return_code, a.stack_id);
    Record(Step(ins_runtime_));
  }
  void On(const MemcpyEvent& m) override {
    Bind(ins_memcpy_, m.start_ns, m.end_ns, m.device_id, m.context_id, m.stream_id,
         m.correlation_id, GlobalPid(m.pid), static_cast<int64_t>(m.bytes), m.copy_kind, 0,
         m.src_kind, m.dst_kind, m.src_device_id, 0, m.dst_device_id, 0, 0,
         static_cast<int64_t>(m.graph_node_id), 0);
    Record(Step(ins_memcpy_));
  }
  void On(const MemsetEvent& m) override {
    Bind(ins_memset_, m.start_ns, m.end_ns, m.device_id, m.context_id, m.stream_id,
         m.correlation_id, GlobalPid(m.pid), m.value, static_cast<int64_t>(m.bytes),
         static_cast<int64_t>(m.graph_node_id), m.memory_kind);
    Record(Step(ins_memset_));
  }
  void On(const SyncEvent& e) override {
    Bind(ins_sync_, e.start_ns, e.end_ns, e.device_id, e.context_id, e.stream_id, e.correlation_id,
         GlobalPid(e.pid), e.sync_type, e.event_id);
    Record(Step(ins_sync_));
  }
  void On(const MemoryEvent& m) override {
    Bind(ins_memory_, m.ts_ns, GlobalPid(m.pid), m.device_id, m.context_id,
         static_cast<int64_t>(m.address), 0, static_cast<int64_t>(m.bytes), m.memory_kind,
         m.op == kMemoryAlloc ? 0 : 1);
    sqlite3_bind_null(ins_memory_, 10);
    BindFrom(ins_memory_, 11, m.correlation_id, m.stream_id);
    Record(Step(ins_memory_));
  }
  void On(const NvtxRangeEvent& r) override {
    Bind(ins_nvtx_, r.start_ns, r.end_ns, kNvtxPushPop, static_cast<int64_t>(r.range_id),
         r.category, r.color);
    sqlite3_bind_null(ins_nvtx_, 7);
    BindFrom(ins_nvtx_, 8, GlobalTid(r.pid, r.tid), GlobalTid(r.pid, r.tid), r.name_id,
             r.domain_id);
    Record(Step(ins_nvtx_));
  }
  void On(const NvtxMarkerEvent& m) override {
    Bind(ins_nvtx_, m.ts_ns);
    sqlite3_bind_null(ins_nvtx_, 2);
    BindFrom(ins_nvtx_, 3, kNvtxMark);
    sqlite3_bind_null(ins_nvtx_, 4);
    BindFrom(ins_nvtx_, 5, m.category, m.color);
    sqlite3_bind_null(ins_nvtx_, 7);
    BindFrom(ins_nvtx_, 8, GlobalTid(m.pid, m.tid), GlobalTid(m.pid, m.tid), m.name_id,
             m.domain_id);
    Record(Step(ins_nvtx_));
  }

  Status Finish(ExportStats* stats) override {
    RETURN_IF_ERROR(status_);
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
  std::string_view Text(uint32_t id) const { return meta_->strings.Get(id); }
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
    };
    for (auto& s : list) {
      if (sqlite3_prepare_v2(db_, s.sql, -1, s.stmt, nullptr) != SQLITE_OK)
        return Internal(StrFormat("SQLite prepare failed: %s (%s)", sqlite3_errmsg(db_), s.sql));
      stmts_.push_back(*s.stmt);
    }
    return OkStatus();
  }
  Status Enums() {
    const char* sql =
        "INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0,'CUDA_MEMCPY_OPER_UNKNOWN','Unknown'),"
        "(1,'CUDA_MEMCPY_OPER_HTOD','Host-to-Device'),(2,'CUDA_MEMCPY_OPER_DTOH','Device-to-Host'),"
        "(3,'CUDA_MEMCPY_OPER_HTOA','Host-to-Array'),(4,'CUDA_MEMCPY_OPER_ATOH','Array-to-Host'),"
        "(5,'CUDA_MEMCPY_OPER_ATOA','Array-to-Array'),(6,'CUDA_MEMCPY_OPER_ATOD','Array-to-Device')"
        ","
        "(7,'CUDA_MEMCPY_OPER_DTOA','Device-to-Array'),(8,'CUDA_MEMCPY_OPER_DTOD','Device-to-"
        "Device'),"
        "(9,'CUDA_MEMCPY_OPER_HTOH','Host-to-Host'),(10,'CUDA_MEMCPY_OPER_PTOP','Peer-to-Peer');"
        "INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown'),"
        "(1,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),(2,'CUDA_MEMOPR_MEMORY_KIND_PINNED','"
        "Pinned'),"
        "(3,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),(4,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'),"
        "(5,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),"
        "(6,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),"
        "(7,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static');"
        "INSERT INTO ENUM_NVTX_EVENT_TYPE VALUES (34,'NvtxMark','Marker'),"
        "(59,'NvtxPushPopRange','PushPop Range'),(60,'NvtxStartEndRange','StartEnd Range');";
    return Exec(sql);
  }
  void InsertString(uint32_t id, std::string_view s) {
    sqlite3_bind_int64(ins_string_, 1, id);
    sqlite3_bind_text(ins_string_, 2, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    Record(Step(ins_string_));
  }
  uint32_t ShortName(uint32_t full) {
    auto [it, inserted] = short_names_.try_emplace(full, 0);
    if (inserted) {
      std::string s = ShortKernelName(Text(full));
      auto [sit, new_string] = local_strings_.try_emplace(s, 0);
      if (new_string) {
        sit->second = next_string_id_++;
        InsertString(sit->second, s);
      }
      it->second = sit->second;
    }
    return it->second;
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
  const Trace* meta_ = nullptr;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
  sqlite3_stmt *ins_string_ = nullptr, *ins_gpu_ = nullptr, *ins_process_ = nullptr,
               *ins_thread_ = nullptr, *ins_kernel_ = nullptr, *ins_runtime_ = nullptr,
               *ins_memcpy_ = nullptr, *ins_memset_ = nullptr, *ins_sync_ = nullptr,
               *ins_memory_ = nullptr, *ins_nvtx_ = nullptr;
  std::unordered_map<uint32_t, uint32_t> short_names_;
  std::unordered_map<std::string, uint32_t> local_strings_;
  uint32_t next_string_id_ = 1;
  uint64_t kernels_ = 0;
  Status status_;
};

}  // namespace

std::unique_ptr<EventSink> MakeSqliteSink(const std::string& path) {
  return std::make_unique<SqliteSink>(path);
}

}  // namespace tracesmith::exporter
