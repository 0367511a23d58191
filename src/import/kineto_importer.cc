// Kineto (torch.profiler) JSON importer. A SAX parse (nlohmann::json) keeps
// memory proportional to the result, not to a DOM of the whole file, and
// gives the raw text of every number: "ts": 1234.567 is microseconds with
// three decimals, which a double cannot hold exactly for absolute
// timestamps, so times are read digit by digit into nanoseconds. Reading the JSON (the SAX
// handler, the numbers, the streamed input) is kineto_json.h; this file converts its events.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <new>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kineto_json.h"
#include "tracesmith/import/import.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::importer {
namespace {

using namespace model;
using namespace kineto;

uint8_t MemoryKindFromName(std::string_view s) {
  static const std::pair<const char*, uint8_t> kKinds[] = {{"Pageable", kMemPageable},
                                                           {"Pinned", kMemPinned},
                                                           {"Device Static", kMemDeviceStatic},
                                                           {"Managed Static", kMemManagedStatic},
                                                           {"Device", kMemDevice},
                                                           {"Array", kMemArray},
                                                           {"Managed", kMemManaged}};
  for (auto& [name, kind] : kKinds)
    if (s == name) return kind;
  return kMemUnknown;
}
uint8_t CopyKindFromName(std::string_view s) {
  for (uint8_t k = kCopyHtoD; k <= kCopyPtoP; ++k)
    if (s == CopyKindName(k)) return k;
  return kCopyUnknown;
}
uint8_t SyncTypeFromName(std::string_view s) {
  if (s == "Event Sync") return kSyncEventSynchronize;
  if (s == "Stream Wait Event") return kSyncStreamWaitEvent;
  if (s == "Stream Sync") return kSyncStreamSynchronize;
  if (s == "Context Sync") return kSyncContextSynchronize;
  return kSyncUnknown;
}

class Builder {
 public:
  explicit Builder(int64_t base) : base_(base) {}

  uint32_t U32(const RawEvent& e, const char* arg, uint32_t fallback = 0) {
    auto it = e.args.find(arg);
    if (it == e.args.end()) return fallback;
    auto v = AsUint(it->second);
    return v ? static_cast<uint32_t>(*v) : fallback;
  }
  uint64_t U64(const RawEvent& e, const char* arg) {
    auto it = e.args.find(arg);
    if (it == e.args.end()) return 0;
    auto v = AsUint(it->second);
    return v ? *v : 0;
  }
  void Triple(const RawEvent& e, const char* arg, uint32_t* x, uint32_t* y, uint32_t* z) {
    auto it = e.args.find(arg);
    uint32_t* out[3] = {x, y, z};
    for (int i = 0; i < 3; ++i) *out[i] = 1;
    if (it == e.args.end()) return;
    for (size_t i = 0; i < 3 && i < it->second.array.size(); ++i) {
      auto v = AsUint(Value{Value::kNumber, it->second.array[i]});
      if (v) *out[i] = static_cast<uint32_t>(*v);
    }
  }
  uint64_t Abs(int64_t rel_ns) const {
    int64_t v = base_ + rel_ns;
    return v < 0 ? 0 : static_cast<uint64_t>(v);
  }

  int64_t base_;
};

std::string_view Field(const RawEvent& e, const char* key) {
  auto it = e.fields.find(key);
  return it == e.fields.end() ? std::string_view() : std::string_view(it->second.text);
}

}  // namespace

namespace {

// Converts events as the parser completes them. What depends on entries that
// may come later in the file is settled in Finish: times are kept relative
// (start in start_ns, duration in end_ns) until baseTimeNanoseconds is known
// (torch.profiler writes it after traceEvents); GPU rows get the launching
// process from the runtime row of their correlation id, wherever it is; and
// process and thread names are kept only for processes that are not GPUs.
class Converter {
 public:
  explicit Converter(ImportStats* st) : st_(*st), b_(0) {}

  void OnEvent(const RawEvent& e) {
    std::string_view ph = Field(e, "ph"), cat = Field(e, "cat"), name = Field(e, "name");
    auto pid_v = AsUint(e.fields.count("pid") ? e.fields.at("pid") : Value{});
    auto tid_v = AsUint(e.fields.count("tid") ? e.fields.at("tid") : Value{});
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (pid_v) {
        corr_pid_[b_.U64(e, "correlation")] = static_cast<uint32_t>(*pid_v);
        if (first_pid_ == 0) first_pid_ = static_cast<uint32_t>(*pid_v);
      }
    }
    if (ph == "M") {
      const Value* v = e.args.count("name") ? &e.args.at("name") : nullptr;
      // Kineto names every possible GPU's "process" (pids 0-15 with labels
      // "GPU n"), also GPUs not in deviceProperties: those are not processes.
      if (name == "process_labels" && pid_v) {
        auto label = e.args.find("labels");
        if (label != e.args.end() && label->second.text.starts_with("GPU "))
          device_pids_[*pid_v] = true;
      }
      if (!pid_v || v == nullptr) {
        ++st_.skipped;
        return;
      }
      if (name == "process_name" || (name == "thread_name" && tid_v))
        names_.push_back({name == "process_name", *pid_v, tid_v.value_or(0), v->text});
      else
        ++st_.skipped;
      return;
    }
    auto ts = MicrosToNs(std::string(Field(e, "ts")));
    if (!pid_v || !tid_v || !ts) {  // spans ("pid": "Spans"), window markers, ...
      ++st_.skipped;
      return;
    }
    Trace& t = t_;
    const uint32_t pid = static_cast<uint32_t>(*pid_v), tid = static_cast<uint32_t>(*tid_v);
    const uint64_t start = static_cast<uint64_t>(*ts);  // relative until Finish
    if (ph == "i" || ph == "I") {
      if (name == "[memory]" && MemoryRow(e, pid, tid, start)) return;
      t.Rows<NvtxMarkerEvent>().push_back(NvtxMarkerEvent{.ts_ns = start,
                                                          .pid = pid,
                                                          .tid = tid,
                                                          .name_id = t.strings.Intern(name),
                                                          .domain_id = t.strings.Intern(cat)});
      ++st_.events;
      return;
    }
    if ((ph == "s" || ph == "f") && cat == "fwdbwd") {  // bound to their ops in Finish
      auto id = AsUint(e.fields.count("id") ? e.fields.at("id") : Value{});
      if (id && *id != 0 && *id <= UINT32_MAX) {
        fwdbwd_.push_back({pid, tid, start, static_cast<uint32_t>(*id), ph == "s"});
        return;
      }
    }
    if (ph != "X") {  // ac2g flows (links come from correlation ids), counters, async events
      ++st_.skipped;
      return;
    }
    auto dur = MicrosToNs(std::string(Field(e, "dur")));
    const uint64_t length = static_cast<uint64_t>(std::max<int64_t>(0, dur.value_or(0)));
    const uint32_t corr = b_.U32(e, "correlation");
    // What every GPU row takes from the event: times, correlation, device
    // (Kineto's pid), context, stream (tid); the host pid comes in Finish.
    auto gpu_fields = [&](auto* row) {
      row->start_ns = start;
      row->end_ns = length;
      row->correlation_id = corr;
      row->device_id = b_.U32(e, "device", pid);
      row->context_id = b_.U32(e, "context");
      row->stream_id = b_.U32(e, "stream", tid);
    };
    if (cat == "kernel") {
      KernelEvent k{};
      gpu_fields(&k);
      k.name_id = k.demangled_id = t.strings.Intern(name);
      b_.Triple(e, "grid", &k.grid_x, &k.grid_y, &k.grid_z);
      b_.Triple(e, "block", &k.block_x, &k.block_y, &k.block_z);
      k.registers_per_thread = b_.U32(e, "registers per thread");
      k.dynamic_shared_bytes = b_.U32(e, "shared memory");  // Kineto sums static + dynamic
      t.Rows<KernelEvent>().push_back(k);
    } else if (cat == "gpu_memcpy") {
      MemcpyEvent m{};
      gpu_fields(&m);
      m.bytes = b_.U64(e, "bytes");
      m.src_device_id = m.dst_device_id = m.device_id;
      // "Memcpy HtoD (Pinned -> Device)"
      std::string_view n = name;
      if (n.starts_with("Memcpy ")) n.remove_prefix(7);
      size_t open = n.find(" ("), arrow = n.find(" -> "), close = n.rfind(')');
      m.copy_kind = CopyKindFromName(n.substr(0, open));
      if (open != std::string_view::npos && arrow != std::string_view::npos &&
          close != std::string_view::npos && arrow > open && close > arrow) {
        m.src_kind = MemoryKindFromName(n.substr(open + 2, arrow - open - 2));
        m.dst_kind = MemoryKindFromName(n.substr(arrow + 4, close - arrow - 4));
      }
      t.Rows<MemcpyEvent>().push_back(m);
    } else if (cat == "gpu_memset") {
      MemsetEvent m{};
      gpu_fields(&m);
      m.bytes = b_.U64(e, "bytes");
      std::string_view n = name;
      size_t open = n.find('('), close = n.rfind(')');
      if (open != std::string_view::npos && close != std::string_view::npos && close > open)
        m.memory_kind = MemoryKindFromName(n.substr(open + 1, close - open - 1));
      t.Rows<MemsetEvent>().push_back(m);
    } else if (cat == "cuda_sync") {
      SyncEvent sync{};
      gpu_fields(&sync);
      // Kineto writes a sync of no stream (context, event) on stream -1.
      if (sync.stream_id == 0xffffffffu) sync.stream_id = 0;
      sync.sync_type = SyncTypeFromName(name);
      t.Rows<SyncEvent>().push_back(sync);
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      ApiEvent a{};
      a.start_ns = start;
      a.end_ns = length;
      a.correlation_id = corr;
      a.pid = pid;
      a.tid = tid;
      a.domain = cat == "cuda_driver" ? kApiDriver : kApiRuntime;
      a.cbid = b_.U32(e, "cbid");
      a.name_id = t.strings.Intern(name);
      a.external_id = b_.U64(e, "External id");
      t.Rows<ApiEvent>().push_back(a);
    } else {
      // CPU ops, annotations, Python functions: ranges on their thread; the
      // category is kept as the range's domain so export writes it back.
      NvtxRangeEvent r{};
      r.start_ns = start;
      r.end_ns = length;
      r.pid = pid;
      r.tid = tid;
      r.name_id = t.strings.Intern(name);
      r.domain_id = t.strings.Intern(cat);
      KinetoOpArgs(e, &r);
      t.Rows<NvtxRangeEvent>().push_back(r);
    }
    ++st_.events;
  }

  Trace Finish(const Collector& c) {
    Trace& t = t_;
    b_.base_ = c.base_ns.value_or(0);
    // Relative start + duration -> absolute start and end.
    auto times = [&](auto& rows) {
      for (auto& r : rows) {
        r.start_ns = b_.Abs(static_cast<int64_t>(r.start_ns));
        r.end_ns = r.start_ns + r.end_ns;
      }
    };
    auto host_pids = [&](auto& rows) {
      for (auto& r : rows) {
        auto host = corr_pid_.find(r.correlation_id);
        r.pid = host != corr_pid_.end() ? host->second : first_pid_;
      }
    };
    times(t.Rows<KernelEvent>()), host_pids(t.Rows<KernelEvent>());
    times(t.Rows<MemcpyEvent>()), host_pids(t.Rows<MemcpyEvent>());
    times(t.Rows<MemsetEvent>()), host_pids(t.Rows<MemsetEvent>());
    times(t.Rows<SyncEvent>()), host_pids(t.Rows<SyncEvent>());
    times(t.Rows<ApiEvent>());
    BindFwdBwdFlows(&t.Rows<NvtxRangeEvent>());
    times(t.Rows<NvtxRangeEvent>());
    for (auto& m : t.Rows<NvtxMarkerEvent>()) m.ts_ns = b_.Abs(static_cast<int64_t>(m.ts_ns));
    for (auto& m : t.Rows<MemoryEvent>()) m.ts_ns = b_.Abs(static_cast<int64_t>(m.ts_ns));
    for (auto& c : t.Rows<CounterEvent>()) c.ts_ns = b_.Abs(static_cast<int64_t>(c.ts_ns));
    AllocationStacks(&t);

    for (const auto& d : c.devices) {
      Device dev{};
      auto get = [&](const char* k) -> uint64_t {
        auto it = d.find(k);
        if (it == d.end()) return 0;
        return AsUint(it->second).value_or(0);
      };
      dev.device_id = static_cast<uint32_t>(get("id"));
      dev.pid = first_pid_;
      auto name = d.find("name");
      if (name != d.end()) dev.name_id = t.strings.Intern(name->second.text);
      dev.memory_bytes = get("totalGlobalMem");
      dev.cc_major = static_cast<uint32_t>(get("computeMajor"));
      dev.cc_minor = static_cast<uint32_t>(get("computeMinor"));
      dev.max_threads_per_block = static_cast<uint32_t>(get("maxThreadsPerBlock"));
      dev.max_registers_per_block = static_cast<uint32_t>(get("regsPerBlock"));
      dev.max_shared_per_block = static_cast<uint32_t>(get("sharedMemPerBlock"));
      dev.sm_count = static_cast<uint32_t>(get("numSms"));
      t.Rows<Device>().push_back(dev);
      device_pids_[dev.device_id] = true;
    }
    for (const Name& n : names_) {
      if (device_pids_.count(n.pid)) {
        ++st_.skipped;
      } else if (n.process) {
        t.Rows<Process>().push_back(Process{.pid = static_cast<uint32_t>(n.pid),
                                            .name_id = t.strings.Intern(n.text),
                                            .driver_version = uint32_t(c.driver_version),
                                            .runtime_version = uint32_t(c.runtime_version),
                                            .cupti_version = uint32_t(c.cupti_version)});
      } else {
        t.Rows<Thread>().push_back(Thread{.tid = static_cast<uint32_t>(n.tid),
                                          .pid = static_cast<uint32_t>(n.pid),
                                          .name_id = t.strings.Intern(n.text)});
      }
    }
    return std::move(t_);
  }

 private:
  struct Name {
    bool process;  // else a thread name
    uint64_t pid, tid;
    std::string text;
  };
  // A "fwdbwd" flow end: torch links a forward op (s) to its backward op
  // (f, "bp": "e") by an id, at the op's own thread and start time.
  struct FlowEnd {
    uint32_t pid, tid;
    uint64_t ts;  // relative, like the ranges' start until Finish
    uint32_t id;
    bool start;
  };

  // torch.profiler's [memory] instant (profile_memory=True; profiler_kineto.cpp):
  // an allocation by c10's allocator of "Device Type" 1 (CUDA: the caching
  // allocator, "Device Id" its GPU) or 0 (CPU) at "Addr", of "Bytes" bytes,
  // or, negative, a free of its allocation's size. Becomes an allocation or
  // free of the memory model (device or pageable memory); the thread is kept
  // for its stack (AllocationStacks). False when the event lacks those args
  // (then a marker, as any instant); another device type (XPU, MPS, ...) or
  // zero bytes is skipped and counted.
  bool MemoryRow(const RawEvent& e, uint32_t pid, uint32_t tid, uint64_t start) {
    auto arg = [&](const char* key) -> const Value* {
      auto it = e.args.find(key);
      return it == e.args.end() ? nullptr : &it->second;
    };
    const Value *bytes_v = arg("Bytes"), *addr_v = arg("Addr"), *type_v = arg("Device Type");
    if (!bytes_v || !addr_v || !type_v) return false;
    const auto bytes = AsInt(*bytes_v);
    const auto addr = AsUint(*addr_v);
    const auto type = AsInt(*type_v);
    if (!bytes || !addr || !type) return false;
    if (*bytes == 0 || (*type != 0 && *type != 1)) {
      ++st_.skipped;
      return true;
    }
    int64_t dev = -1;  // -1: none (CPU memory's)
    if (const Value* dev_v = arg("Device Id"))
      if (auto d = AsInt(*dev_v)) dev = *d;
    MemoryEvent m{};
    m.ts_ns = start;  // relative until Finish
    m.address = *addr;
    m.bytes = *bytes > 0 ? uint64_t(*bytes) : uint64_t(0) - uint64_t(*bytes);
    m.op = *bytes > 0 ? kMemoryAlloc : kMemoryFree;
    m.pid = pid;
    m.device_id = *type == 1 && dev >= 0 && dev <= INT32_MAX ? uint32_t(dev) : 0;
    m.memory_kind = *type == 1 ? kMemDevice : kMemPageable;
    if (*type == 1) {
      TorchTotal(e, "Total Allocated", kTorchAllocatedCounter, 0, m);
      TorchTotal(e, "Total Reserved", kTorchReservedCounter, 1, m);
    }
    t_.Rows<MemoryEvent>().push_back(m);
    memory_tids_.push_back(tid);
    ++st_.events;
    return true;
  }

  // The caching allocator's own total after a [memory] event of CUDA memory, as
  // a counter (model::kTorchAllocatedCounter, kTorchReservedCounter) when it
  // changed.
  void TorchTotal(const RawEvent& e, const char* arg, const char* name, int which,
                  const MemoryEvent& m) {
    auto it = e.args.find(arg);
    if (it == e.args.end()) return;
    const auto v = AsInt(it->second);
    if (!v || *v < 0) return;
    auto [last, fresh] = torch_totals_[which].try_emplace({m.pid, m.device_id}, *v);
    if (!fresh && last->second == *v) return;
    last->second = *v;
    t_.Rows<CounterEvent>().push_back(CounterEvent{.ts_ns = m.ts_ns,
                                                   .value = double(*v),
                                                   .pid = m.pid,
                                                   .device_id = m.device_id,
                                                   .name_id = t_.strings.Intern(name)});
    ++st_.events;
  }

  // Each [memory] row's call stack, as far as torch's trace tells it: the
  // allocator's frame (libc10_cuda.so for CUDA memory, libc10.so for CPU
  // memory; its address unknown), then the ranges open on the row's thread
  // at that instant, innermost first: torch's ops and annotations as named
  // frames ("aten::empty_strided"), python_function ranges (with_stack=True:
  // "train.py(36): step") as Python frames. So `memory` names the owner (the
  // caching allocator) and the call site (the Python line, else the op). At
  // most kMaxFrames frames (the innermost), kMaxOpen ranges held open per
  // thread (the innermost), so that no input costs more than that per row.
  void AllocationStacks(Trace* t) {
    static constexpr size_t kMaxFrames = 64, kMaxOpen = 256;
    std::vector<MemoryEvent>& rows = t->Rows<MemoryEvent>();
    const std::vector<NvtxRangeEvent>& ranges = t->Rows<NvtxRangeEvent>();
    if (rows.empty() || rows.size() != memory_tids_.size()) return;
    StackBuilder stacks(t);
    uint32_t next_mapping = 1;
    for (const Mapping& m : t->Rows<Mapping>())
      next_mapping = std::max(next_mapping, m.mapping_id + 1);
    uint32_t allocator_frame[2] = {0, 0};  // [CPU, CUDA]
    auto allocator = [&](bool cuda) {
      uint32_t& frame = allocator_frame[cuda];
      if (!frame) {
        Mapping m{};
        m.mapping_id = next_mapping++;
        m.path_id = t->strings.Intern(cuda ? "libc10_cuda.so" : "libc10.so");
        t->Rows<Mapping>().push_back(m);
        Frame f{};
        f.kind = kFrameNative;
        f.mapping_id = m.mapping_id;
        frame = stacks.InternFrame(f);
      }
      return frame;
    };
    std::unordered_map<uint32_t, uint32_t> range_frame;  // name id -> frame (0: none)
    auto frame_of = [&](const NvtxRangeEvent& r) {
      auto [it, fresh] = range_frame.try_emplace(r.name_id, 0);
      if (!fresh) return it->second;
      Frame f{};
      const std::string name(t->strings.Get(r.name_id));
      if (t->strings.Get(r.domain_id) == "python_function") {
        // "path/file.py(36): step"; others ("<built-in method ...>",
        // "nn.Module: Linear_0") are no frame.
        const size_t close = name.find("): "), open = name.rfind('(', close);
        if (close == std::string::npos || open == std::string::npos || open == 0) return 0u;
        uint32_t line = 0;
        auto r2 = std::from_chars(name.data() + open + 1, name.data() + close, line);
        if (r2.ec != std::errc() || r2.ptr != name.data() + close) return 0u;
        f.kind = kFramePython;
        f.file_id = t->strings.Intern(std::string_view(name).substr(0, open));
        f.function_id = t->strings.Intern(std::string_view(name).substr(close + 3));
        f.line = line;
      } else {
        f.kind = kFrameNative;
        f.function_id = r.name_id;
      }
      return it->second = stacks.InternFrame(f);
    };
    // Ranges and rows by thread, in time order (ranges starting together:
    // the longer, outer one first).
    std::map<std::pair<uint32_t, uint32_t>, std::pair<std::vector<uint32_t>, std::vector<uint32_t>>>
        threads;
    for (uint32_t i = 0; i < rows.size(); ++i)
      threads[{rows[i].pid, memory_tids_[i]}].second.push_back(i);
    for (uint32_t i = 0; i < ranges.size(); ++i) {
      auto it = threads.find({ranges[i].pid, ranges[i].tid});
      if (it != threads.end()) it->second.first.push_back(i);
    }
    std::vector<uint32_t> open, frames;
    for (auto& [thread, lists] : threads) {
      auto& [range_ids, row_ids] = lists;
      std::sort(range_ids.begin(), range_ids.end(), [&](uint32_t a, uint32_t b) {
        return ranges[a].start_ns != ranges[b].start_ns ? ranges[a].start_ns < ranges[b].start_ns
                                                        : ranges[a].end_ns > ranges[b].end_ns;
      });
      std::stable_sort(row_ids.begin(), row_ids.end(),
                       [&](uint32_t a, uint32_t b) { return rows[a].ts_ns < rows[b].ts_ns; });
      open.clear();
      size_t next = 0;
      for (uint32_t row : row_ids) {
        const uint64_t ts = rows[row].ts_ns;
        for (; next < range_ids.size() && ranges[range_ids[next]].start_ns <= ts; ++next) {
          const uint64_t start = ranges[range_ids[next]].start_ns;
          while (!open.empty() && ranges[open.back()].end_ns < start) open.pop_back();
          if (open.size() >= 2 * kMaxOpen) {  // drop what has ended, then the outermost
            std::erase_if(open, [&](uint32_t r) { return ranges[r].end_ns < start; });
            if (open.size() >= kMaxOpen)
              open.erase(open.begin(), open.begin() + ptrdiff_t(open.size() - kMaxOpen + 1));
          }
          open.push_back(range_ids[next]);
        }
        while (!open.empty() && ranges[open.back()].end_ns < ts) open.pop_back();
        frames.assign(1, allocator(rows[row].memory_kind == kMemDevice));
        for (size_t k = open.size(); k-- > 0 && frames.size() < kMaxFrames;)
          if (ranges[open[k]].end_ns >= ts)
            if (const uint32_t f = frame_of(ranges[open[k]])) frames.push_back(f);
        rows[row].stack_id = stacks.InternStack(frames);
      }
    }
    memory_tids_.clear();
  }

  // torch's args of a CPU-side range (cpu_op, user_annotation,
  // gpu_user_annotation), kept so that export writes them back.
  void KinetoOpArgs(const RawEvent& e, NvtxRangeEvent* r) {
    auto arg = [&](const char* key) -> std::optional<uint64_t> {
      auto it = e.args.find(key);
      return it == e.args.end() ? std::nullopt : AsUint(it->second);
    };
    if (auto v = arg("External id")) {
      r->external_id = *v;
      r->kineto_args |= kKinetoExternalId;
    }
    auto rf = arg("Record function id"), ev = arg("Ev Idx");
    if (rf || ev) {
      r->record_function_id = rf.value_or(0);
      r->ev_idx = static_cast<uint32_t>(ev.value_or(0));
      r->kineto_args |= kKinetoOpArgs;
    }
    if (auto seq = arg("Sequence number")) {
      r->sequence_number = static_cast<int64_t>(*seq);  // AsUint keeps a negative's bits
      r->fwd_thread_id = static_cast<uint32_t>(arg("Fwd thread id").value_or(0));
      r->kineto_args |= kKinetoSequence;
    }
  }

  // Each fwdbwd flow end goes to the range it binds to: same pid, tid and
  // start; among ranges starting together, an op with a sequence number
  // (the autograd-recorded one torch links). A flow keeps its id only with
  // both ends bound; the rest is counted in `skipped`.
  void BindFwdBwdFlows(std::vector<NvtxRangeEvent>* ranges) {
    if (fwdbwd_.empty()) return;
    using Key = std::tuple<uint32_t, uint32_t, uint64_t>;
    std::map<Key, size_t> best;  // flow position -> chosen range
    for (const FlowEnd& f : fwdbwd_) best.emplace(Key{f.pid, f.tid, f.ts}, SIZE_MAX);
    for (size_t i = 0; i < ranges->size(); ++i) {
      const NvtxRangeEvent& r = (*ranges)[i];
      auto it = best.find(Key{r.pid, r.tid, r.start_ns});
      if (it == best.end()) continue;
      if (it->second == SIZE_MAX || (!((*ranges)[it->second].kineto_args & kKinetoSequence) &&
                                     (r.kineto_args & kKinetoSequence)))
        it->second = i;
    }
    std::unordered_map<uint32_t, size_t> ends[2];  // [start?] id -> range
    for (const FlowEnd& f : fwdbwd_) {
      size_t i = best[Key{f.pid, f.tid, f.ts}];
      uint32_t* slot = nullptr;
      if (i != SIZE_MAX) slot = f.start ? &(*ranges)[i].flow_out_id : &(*ranges)[i].flow_in_id;
      if (slot == nullptr || *slot != 0 || !ends[f.start].emplace(f.id, i).second) {
        ++st_.skipped;  // no range there, two flows on one end, or a repeated id
        continue;
      }
      *slot = f.id;
    }
    for (int start = 0; start < 2; ++start)
      for (const auto& [id, i] : ends[start]) {
        if (ends[1 - start].count(id)) continue;
        ++st_.skipped;  // the other end is missing: no half flow
        (start ? (*ranges)[i].flow_out_id : (*ranges)[i].flow_in_id) = 0;
      }
    fwdbwd_.clear();
  }

  ImportStats& st_;
  Trace t_;
  Builder b_;
  std::unordered_map<uint64_t, uint32_t> corr_pid_;  // host pid of each correlation id
  std::unordered_map<uint64_t, bool> device_pids_;
  std::vector<Name> names_;
  std::vector<FlowEnd> fwdbwd_;
  std::vector<uint32_t> memory_tids_;  // the thread of each MemoryEvent row
  // The last Total Allocated [0] and Total Reserved [1] by (pid, device).
  std::map<std::pair<uint32_t, uint32_t>, int64_t> torch_totals_[2];
  uint32_t first_pid_ = 0;
};

}  // namespace

namespace {

template <typename Parse>
StatusOr<Trace> ImportWith(ImportStats* stats, Parse parse) {
  ImportStats local;
  ImportStats& st = stats ? *stats : local;
  const ImportStats before = st;
  Converter convert(&st);
  Collector c([&](const RawEvent& e) { convert.OnEvent(e); });
  bool ok = false;
  try {
    ok = parse(&c);
  } catch (const std::bad_alloc&) {
    // One token (a string, a number) larger than memory allows.
    st = before;
    return DataLoss(
        "not importable: the JSON holds a single token (string or number) larger than the "
        "memory available for it");
  }
  if (!ok) {
    st = before;
    return DataLoss("not a valid torch.profiler JSON trace: " + c.error);
  }
  // Valid JSON without the trace's one required key ({}, a config file, ...)
  // is not an empty trace.
  if (!c.saw_trace_events)
    return InvalidArgument(
        "not a torch.profiler trace: the JSON has no top-level \"traceEvents\" array (the "
        "Chrome/Kineto trace format written by torch.profiler's export_chrome_trace)");
  return convert.Finish(c);
}

}  // namespace

StatusOr<Trace> ImportKinetoJson(std::string_view text, ImportStats* stats) {
  return ImportWith(stats, [&](Collector* c) {
    return json::sax_parse(text.begin(), text.end(), c, json::input_format_t::json, true);
  });
}

StatusOr<Trace> ImportKinetoJsonStream(const std::function<size_t(char*, size_t)>& read,
                                       ImportStats* stats) {
  return ImportWith(stats, [&](Collector* c) {
    BlockIterator::Source source{read};
    c->input_position = [&source](uint64_t pos) { return source.InputPosition(pos); };
    return json::sax_parse(BlockIterator(&source), BlockIterator(), c, json::input_format_t::json,
                           true);
  });
}

}  // namespace tracesmith::importer
