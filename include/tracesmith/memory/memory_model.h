// The live-memory model: what is allocated on each device of each process at
// every instant, from a trace's allocation and free events (MemoryEvent), and
// who owns each allocation. `tracesmith memory`, the exporters' "memory in
// use" counters and the Python API all use this one model.
//
// - Events are applied in time order (StreamMemoryEvents gives them so).
// - Memory is accounted per MemoryKey: process, device and space (device
//   memory, managed, pinned host). A free without a size takes the size of the
//   allocation it ends; a free of an address nothing allocated (allocated before
//   the capture started) changes nothing and is counted; an allocation at an
//   address already live ends the earlier one first (its free was lost).
// - Virtual memory management: physical memory (cuMemCreate/Release, keyed by
//   handle) is what is "live"; mapped bytes (cuMemMap/Unmap) and reserved
//   address space (cuMemAddressReserve/Free) are tracked beside it. IPC imports
//   are another process's memory: tracked as "imported", never as live.
// - The owner of an allocation is named from its host stack: the library of
//   the innermost frame outside the CUDA runtime and driver (MemoryOwners).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

enum class MemorySpace : uint8_t { kDevice = 0, kManaged = 1, kPinnedHost = 2, kOther = 3 };
// Device, array and static device memory are kDevice; pageable is kOther.
MemorySpace SpaceOf(uint8_t memory_kind);
const char* MemorySpaceName(MemorySpace space);  // "device", "managed", "pinned host", "other"

struct MemoryKey {
  uint32_t pid = 0, device_id = 0;
  MemorySpace space = MemorySpace::kDevice;
  auto operator<=>(const MemoryKey&) const = default;
};

struct Allocation {
  uint64_t address = 0, bytes = 0, alloc_ns = 0;
  uint32_t stack_id = 0, correlation_id = 0;
  uint8_t memory_kind = 0;
  bool is_async = false;
};

// What applying one event did.
struct MemoryChange {
  enum Kind : uint8_t {
    kNone,           // nothing to account (unknown op, zero-size allocation)
    kAlloc,          // `alloc` became live: +alloc.bytes
    kFree,           // `alloc` ended: -alloc.bytes
    kUnmatchedFree,  // a free of an address not live (allocated before the capture)
    kMap,            // VMM: `bytes` mapped at `address` (mapped, not live)
    kUnmap,
    kReserve,  // VMM: address space reserved / given back
    kUnreserve,
    kImport,  // IPC: another process's allocation opened / closed
    kUnimport,
  };
  Kind kind = kNone;
  MemoryKey key;
  uint64_t ts_ns = 0;
  // kAlloc/kFree: the allocation made or ended (a free's size is its
  // allocation's). Other kinds: address and bytes of the event.
  Allocation alloc;
  // An allocation at a live address ended the earlier one first (its free was
  // lost); `replaced` is that earlier allocation (bytes 0 when none).
  Allocation replaced;
  // Live bytes of `key` after the change.
  uint64_t live_bytes = 0;
};

// Per MemoryKey totals beside the live bytes.
struct MemoryTotals {
  uint64_t live_bytes = 0, live_count = 0;
  uint64_t mapped_bytes = 0, reserved_bytes = 0, imported_bytes = 0;
  uint64_t allocs = 0, frees = 0, unmatched_frees = 0, replaced = 0;
  uint64_t allocated_bytes = 0;  // sum over allocations
};

class LiveMemory {
 public:
  MemoryChange Apply(const model::MemoryEvent& e);
  const std::map<MemoryKey, MemoryTotals>& totals() const { return totals_; }
  // Every live allocation, unordered.
  void ForEachLive(const std::function<void(const MemoryKey&, const Allocation&)>& fn) const;
  size_t live_count() const { return live_.size(); }

 private:
  struct Slot {
    MemoryKey key;
    Allocation alloc;
  };
  struct AddrKey {
    uint32_t pid;
    uint8_t table;  // 0: allocations, 1: VMM handles, 2: mappings, 3: reservations, 4: imports
    uint64_t address;
    bool operator==(const AddrKey&) const = default;
  };
  struct AddrHash {
    size_t operator()(const AddrKey& k) const {
      return std::hash<uint64_t>()(k.address ^ (uint64_t{k.pid} << 40) ^ (uint64_t{k.table} << 60));
    }
  };
  MemoryChange Begin(const model::MemoryEvent& e, uint8_t table, MemoryChange::Kind kind);
  MemoryChange End(const model::MemoryEvent& e, uint8_t table, MemoryChange::Kind kind);

  std::unordered_map<AddrKey, Slot, AddrHash> live_;
  std::map<MemoryKey, MemoryTotals> totals_;
};

// Names who owns an allocation from its stack: the library of the innermost
// native frame outside the CUDA runtime/driver, CUPTI, TraceSmith and libc,
// as a user knows it ("PyTorch caching allocator", "NCCL", "cuBLAS", "cuDNN",
// "XLA", "Triton"); a frame of the program itself (or a Python frame, when the
// native walk found only runtime frames) is "program (<file name>)"; no stack:
// "(no stack)"; static memory of loaded modules: "module globals".
class MemoryOwners {
 public:
  explicit MemoryOwners(const model::Trace& meta);
  // Owner index: 0 is "(no stack)".
  uint32_t Of(uint32_t stack_id);
  // The same, except that static device memory (a module's __device__
  // variables, allocated when it loads, without a call) is its own owner.
  uint32_t Of(const Allocation& a);
  const std::string& Name(uint32_t owner) const { return names_[owner]; }
  // The file the owner was recognised from ("libc10_cuda.so"), empty for 0.
  const std::string& Library(uint32_t owner) const { return libraries_[owner]; }
  size_t size() const { return names_.size(); }

 private:
  uint32_t Intern(const std::string& name, const std::string& library);
  const model::Trace& meta_;
  std::vector<std::string> names_, libraries_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::unordered_map<uint32_t, uint32_t> by_stack_;
};

// Calls `fn(meta, event)` for every memory event of the file in time order,
// in bounded memory: events are held until no later chunk (by the chunk
// index's time ranges) can hold an earlier one. `meta` holds the strings and
// metadata read so far. `on_end` gets every metadata row of the file.
// `late` (optional) receives how many events came after a later one had
// been released (files without an index whose chunks overlap in time).
// Any source: one file, a run merged on the fly (cluster/run_source.h).
Status StreamMemoryEvents(
    format::TraceSource& source,
    const std::function<Status(const model::Trace& meta, const model::MemoryEvent& e)>& fn,
    const std::function<Status(const model::Trace& meta)>& on_end, uint64_t* late = nullptr);

}  // namespace tracesmith::analysis
