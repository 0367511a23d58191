// The Perfetto exporter's track groups by key (perfetto_exporter.cc): what a
// group of tracks is for (a thread, a stream, its syncs, ...) and an exact
// open-addressing index from key to group, looked up once per event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "perfetto_tracks.h"
#include "tracesmith/model/record_macros.h"

namespace tracesmith::exporter {

enum class GroupKind : uint8_t {
  kThread,
  kStream,
  kStreamSync,
  kDeviceModules,
  kProcessMisc,
  kCounter,
  kMemoryCounter,  // a = device, b = MemoryCounterId(...)
  kGpuMetric,      // a = device, b = the metric's id in the process (GpuMetricSample)
  kAppCounter,     // a = the counter's name id (AppCounterEvent)
};

struct GroupKey {
  GroupKind kind;
  uint32_t pid, a, b;
  bool operator==(const GroupKey&) const = default;
};
struct GroupKeyHash {
  size_t operator()(const GroupKey& k) const {
    uint64_t h = model::HashMix(static_cast<uint64_t>(k.kind), k.pid);
    return model::HashMix(model::HashMix(h, k.a), k.b);
  }
};

// GroupKey -> TrackGroup*, open addressing with linear probing, at most
// half full. Groups are never removed.
class GroupIndex {
 public:
  GroupIndex() : slots_(16) {}
  TrackGroup* Find(const GroupKey& key, size_t hash) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = Mix(hash) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.group == nullptr) return nullptr;
      if (s.key == key) return s.group;
    }
  }
  void Insert(const GroupKey& key, size_t hash, TrackGroup* group) {
    if ((count_ + 1) * 2 > slots_.size()) {
      std::vector<Slot> old(slots_.size() * 2);
      old.swap(slots_);
      count_ = 0;
      for (const Slot& s : old)
        if (s.group != nullptr) Insert(s.key, GroupKeyHash{}(s.key), s.group);
    }
    const size_t mask = slots_.size() - 1;
    size_t i = Mix(hash) & mask;
    while (slots_[i].group != nullptr) i = (i + 1) & mask;
    slots_[i] = {key, group};
    ++count_;
  }

 private:
  struct Slot {
    GroupKey key{};
    TrackGroup* group = nullptr;
  };
  // The multiply in HashMix leaves the low bits of the hash a function of
  // the low bits of the key: fold the high bits in.
  static size_t Mix(size_t h) { return h ^ (h >> 29) ^ (h >> 47); }
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

// Allocation slices of one process and device: lanes (tracks all named
// "Allocations", which Perfetto's UI merges into one) holding at most one
// open allocation each. An allocation's end is known only at its free, and
// lifetimes overlap without nesting, so it takes the lowest-numbered free
// lane (first-free assignment): the lanes needed are the most allocations
// live at once. Past kMaxAllocationLanes an allocation is counted, not drawn.
// Static memory (module globals) has no slices (BeginAllocation).
constexpr uint32_t kMaxAllocationLanes = 1024;
struct AllocationTrack {
  uint64_t parent_uuid = 0;
  std::vector<TrackLane*> lanes;
  std::vector<uint8_t> busy;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> free;  // lowest first
};

}  // namespace tracesmith::exporter
