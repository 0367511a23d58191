#include "tracesmith/memory/memory_model.h"

#include <algorithm>
#include <queue>

#include "tracesmith/model/stack_builder.h"

namespace tracesmith::analysis {
namespace {

// LiveMemory's address tables.
enum Table : uint8_t {
  kAllocations = 0,
  kHandles = 1,
  kMappings = 2,
  kReservations = 3,
  kImports = 4
};

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

// Modules that are never an allocation's owner: the CUDA runtime and driver,
// CUPTI, TraceSmith, the C/C++ runtime.
bool RuntimeModule(std::string_view file) {
  for (std::string_view p :
       {"libcuda.", "libcudart", "libcupti", "libtracesmith", "libc.so", "libc-", "libstdc++",
        "libgcc_s", "ld-linux", "libpthread", "libdl.", "libnvidia-"})
    if (StartsWith(file, p)) return true;
  return false;
}

// The Python interpreter: an owner is then named from the Python frames.
bool InterpreterModule(std::string_view file) {
  return StartsWith(file, "python") || StartsWith(file, "libpython");
}

// A library users know by name, from its file name ("" when not one).
const char* KnownOwner(std::string_view file) {
  struct Rule {
    std::string_view prefix;
    const char* owner;
  };
  static constexpr Rule kRules[] = {
      {"libc10_cuda", "PyTorch caching allocator"},
      {"libtorch", "PyTorch"},
      {"libc10", "PyTorch"},
      {"libnccl", "NCCL"},
      {"libcublasLt", "cuBLASLt"},
      {"libcublas", "cuBLAS"},
      {"libcudnn", "cuDNN"},
      {"libcufft", "cuFFT"},
      {"libcusparse", "cuSPARSE"},
      {"libcusolver", "cuSOLVER"},
      {"libcurand", "cuRAND"},
      {"libnvshmem", "NVSHMEM"},
      {"libnvrtc", "NVRTC"},
      {"libnvJitLink", "nvJitLink"},
      {"xla_extension", "XLA"},
      {"libxla", "XLA"},
      {"libjax", "XLA"},
      {"libtriton", "Triton"},
  };
  for (const Rule& r : kRules)
    if (StartsWith(file, r.prefix)) return r.owner;
  if (Contains(file, "jaxlib") || Contains(file, "pjrt")) return "XLA";
  if (StartsWith(file, "cupy") || Contains(file, "cupy_backends")) return "CuPy";
  return "";
}

}  // namespace

MemorySpace SpaceOf(uint8_t memory_kind) {
  switch (memory_kind) {
    case model::kMemDevice:
    case model::kMemArray:
    case model::kMemDeviceStatic:
      return MemorySpace::kDevice;
    case model::kMemManaged:
    case model::kMemManagedStatic:
      return MemorySpace::kManaged;
    case model::kMemPinned:
      return MemorySpace::kPinnedHost;
    default:
      return MemorySpace::kOther;
  }
}

const char* MemorySpaceName(MemorySpace space) {
  switch (space) {
    case MemorySpace::kDevice:
      return "device";
    case MemorySpace::kManaged:
      return "managed";
    case MemorySpace::kPinnedHost:
      return "pinned host";
    default:
      return "other";
  }
}

// ---- LiveMemory -------------------------------------------------------------

MemoryChange LiveMemory::Apply(const model::MemoryEvent& e) {
  switch (e.op) {
    case model::kMemoryAlloc:
      return Begin(e, kAllocations, MemoryChange::kAlloc);
    case model::kMemoryFree:
      return End(e, kAllocations, MemoryChange::kFree);
    case model::kMemoryVmmCreate:
      return Begin(e, kHandles, MemoryChange::kAlloc);
    case model::kMemoryVmmRelease:
      return End(e, kHandles, MemoryChange::kFree);
    case model::kMemoryVmmMap:
      return Begin(e, kMappings, MemoryChange::kMap);
    case model::kMemoryVmmUnmap:
      return End(e, kMappings, MemoryChange::kUnmap);
    case model::kMemoryVmmReserve:
      return Begin(e, kReservations, MemoryChange::kReserve);
    case model::kMemoryVmmUnreserve:
      return End(e, kReservations, MemoryChange::kUnreserve);
    case model::kMemoryIpcOpen:
      return Begin(e, kImports, MemoryChange::kImport);
    case model::kMemoryIpcClose:
      return End(e, kImports, MemoryChange::kUnimport);
    default: {
      MemoryChange c;
      c.ts_ns = e.ts_ns;
      c.key = {e.pid, e.device_id, SpaceOf(e.memory_kind)};
      return c;
    }
  }
}

namespace {
uint64_t* BytesOf(MemoryTotals& t, uint8_t table) {
  switch (table) {
    case kMappings:
      return &t.mapped_bytes;
    case kReservations:
      return &t.reserved_bytes;
    case kImports:
      return &t.imported_bytes;
    default:
      return &t.live_bytes;
  }
}
}  // namespace

MemoryChange LiveMemory::Begin(const model::MemoryEvent& e, uint8_t table,
                               MemoryChange::Kind kind) {
  MemoryChange c;
  c.ts_ns = e.ts_ns;
  c.key = {e.pid, e.device_id, SpaceOf(e.memory_kind)};
  c.alloc = {e.address,        e.bytes,       e.ts_ns,        e.stack_id,
             e.correlation_id, e.memory_kind, e.is_async != 0};
  const bool live = table == kAllocations || table == kHandles;
  auto [it, fresh] = live_.try_emplace(AddrKey{e.pid, table, e.address});
  if (!fresh) {  // the earlier one's end was lost
    Slot& old = it->second;
    MemoryTotals& ot = totals_[old.key];
    *BytesOf(ot, table) -= old.alloc.bytes;
    if (live) {
      --ot.live_count;
      ++ot.replaced;
    }
    c.replaced = old.alloc;
  }
  it->second = Slot{c.key, c.alloc};
  MemoryTotals& t = totals_[c.key];
  *BytesOf(t, table) += e.bytes;
  if (live) {
    ++t.live_count;
    ++t.allocs;
    t.allocated_bytes += e.bytes;
  }
  c.kind = kind;
  c.live_bytes = t.live_bytes;
  return c;
}

MemoryChange LiveMemory::End(const model::MemoryEvent& e, uint8_t table, MemoryChange::Kind kind) {
  MemoryChange c;
  c.ts_ns = e.ts_ns;
  const bool live = table == kAllocations || table == kHandles;
  auto it = live_.find(AddrKey{e.pid, table, e.address});
  if (it == live_.end()) {
    c.key = {e.pid, e.device_id, SpaceOf(e.memory_kind)};
    c.alloc = {e.address, e.bytes, 0, e.stack_id, e.correlation_id, e.memory_kind, e.is_async != 0};
    MemoryTotals& t = totals_[c.key];
    if (live) ++t.unmatched_frees;
    c.kind = live ? MemoryChange::kUnmatchedFree : MemoryChange::kNone;
    c.live_bytes = t.live_bytes;
    return c;
  }
  // The allocation's key and size: a free's own device or size may be unset.
  c.key = it->second.key;
  c.alloc = it->second.alloc;
  live_.erase(it);
  MemoryTotals& t = totals_[c.key];
  *BytesOf(t, table) -= c.alloc.bytes;
  if (live) {
    --t.live_count;
    ++t.frees;
  }
  c.kind = kind;
  c.live_bytes = t.live_bytes;
  return c;
}

void LiveMemory::ForEachLive(
    const std::function<void(const MemoryKey&, const Allocation&)>& fn) const {
  for (const auto& [k, slot] : live_)
    if (k.table == kAllocations || k.table == kHandles) fn(slot.key, slot.alloc);
}

// ---- MemoryOwners -------------------------------------------------------------

MemoryOwners::MemoryOwners(const model::Trace& meta) : meta_(meta) { Intern("(no stack)", ""); }

uint32_t MemoryOwners::Intern(const std::string& name, const std::string& library) {
  auto [it, fresh] = by_name_.try_emplace(name, uint32_t(names_.size()));
  if (fresh) {
    names_.push_back(name);
    libraries_.push_back(library);
  }
  return it->second;
}

uint32_t MemoryOwners::Of(const Allocation& a) {
  if (a.memory_kind == model::kMemDeviceStatic || a.memory_kind == model::kMemManagedStatic)
    return Intern("module globals", "");
  return Of(a.stack_id);
}

uint32_t MemoryOwners::Of(uint32_t stack_id) {
  if (!stack_id) return 0;
  if (auto it = by_stack_.find(stack_id); it != by_stack_.end()) return it->second;
  const auto& frames = meta_.Rows<model::Frame>();
  const auto& mappings = meta_.Rows<model::Mapping>();
  auto file_of = [&](const model::Frame& f) -> std::string {
    // Mapping ids are 1-based positions in most traces; look up by id.
    if (f.mapping_id && f.mapping_id <= mappings.size() &&
        mappings[f.mapping_id - 1].mapping_id == f.mapping_id)
      return BaseName(meta_.strings.Get(mappings[f.mapping_id - 1].path_id));
    for (const model::Mapping& m : mappings)
      if (m.mapping_id == f.mapping_id) return BaseName(meta_.strings.Get(m.path_id));
    return "";
  };
  uint32_t owner = 0;
  bool interpreter = false, any = false;
  std::string first_python;
  for (uint32_t id : model::StackFrames(meta_, stack_id)) {
    if (!id || id > frames.size()) continue;
    any = true;
    const model::Frame& f = frames[id - 1];
    if (f.kind == model::kFramePython) {
      if (first_python.empty()) first_python = BaseName(meta_.strings.Get(f.file_id));
      continue;
    }
    if (interpreter) continue;  // native frames under the interpreter: the Python frames decide
    const std::string file = file_of(f);
    if (file.empty() || RuntimeModule(file)) continue;
    if (InterpreterModule(file)) {
      interpreter = true;
      continue;
    }
    const char* known = KnownOwner(file);
    owner = Intern(*known ? known : "program (" + file + ")", file);
    break;
  }
  if (!owner && !first_python.empty())
    owner = Intern("program (" + first_python + ")", first_python);
  if (!owner) owner = Intern(any ? "(CUDA runtime only)" : "(unknown frame)", "");
  by_stack_.emplace(stack_id, owner);
  return owner;
}

// ---- StreamMemoryEvents -------------------------------------------------------

Status StreamMemoryEvents(
    format::TraceSource& reader,
    const std::function<Status(const model::Trace& meta, const model::MemoryEvent& e)>& fn,
    const std::function<Status(const model::Trace& meta)>& on_end, uint64_t* late) {
  // The memory chunks in file order, with the earliest start each can hold;
  // watermark[k]: the earliest start of chunks k.. (UINT64_MAX past the end).
  std::vector<uint64_t> watermark;
  bool known = true;
  for (const format::ChunkIndexEntry& c : reader.TableChunks()) {
    if (c.table_kind != uint16_t(model::TableKind::kMemory)) continue;
    if (c.min_ts == 0 && c.rows > 0) known = false;
    watermark.push_back(c.min_ts);
  }
  watermark.push_back(UINT64_MAX);
  for (size_t i = watermark.size() - 1; i-- > 0;)
    watermark[i] = std::min(watermark[i], watermark[i + 1]);
  // Without time ranges, at most this many events wait (oldest released first).
  constexpr size_t kMaxHeld = size_t{1} << 20;
  auto later = [](const model::MemoryEvent& a, const model::MemoryEvent& b) {
    return a.ts_ns > b.ts_ns;
  };
  std::priority_queue<model::MemoryEvent, std::vector<model::MemoryEvent>, decltype(later)> held(
      later);
  uint64_t released_ts = 0, out_of_order = 0;
  size_t chunk = 0;
  auto release = [&](const model::Trace& meta, uint64_t before, size_t keep) -> Status {
    while (!held.empty() && (held.top().ts_ns < before || held.size() > keep)) {
      model::MemoryEvent e = held.top();
      held.pop();
      if (e.ts_ns < released_ts) ++out_of_order;
      released_ts = std::max(released_ts, e.ts_ns);
      RETURN_IF_ERROR(fn(meta, e));
    }
    return OkStatus();
  };
  Status st = reader.Stream(
      [&](const model::Trace& batch, model::TableKind kind) -> Status {
        if (kind != model::TableKind::kMemory) return OkStatus();
        for (const model::MemoryEvent& e : batch.Rows<model::MemoryEvent>()) held.push(e);
        ++chunk;
        const uint64_t mark = known ? watermark[std::min(chunk, watermark.size() - 1)] : 0;
        return release(batch, mark, known ? SIZE_MAX : kMaxHeld);
      },
      [&](const model::Trace& meta) -> Status {
        RETURN_IF_ERROR(release(meta, UINT64_MAX, 0));
        return on_end ? on_end(meta) : OkStatus();
      },
      [](model::TableKind kind) { return kind == model::TableKind::kMemory; });
  if (late) *late = out_of_order;
  return st;
}

}  // namespace tracesmith::analysis
