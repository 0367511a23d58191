#include "fde_index.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace tracesmith::stacks {
namespace {

struct Index {
  Index* retired_next = nullptr;  // on the list of replaced indexes (still readable)
  uintptr_t hdr = 0;
  uint64_t count = 0;
  int64_t base = 0;  // the first entry's initial location (datarel)
  uint32_t shift = 12, pages = 0;
  uint32_t first[1];  // [pages]: the last entry whose location is at or before the page's start
};

// Open addressing by header address; written by the writer (a CAS per slot:
// PrepareModules may also run on the thread that starts the capture), never
// removed (an unloaded module's index stays, checked by its users).
constexpr int kSlots = 4096;
std::atomic<const Index*> g_slots[kSlots];
std::atomic<uint64_t> g_narrowed{0}, g_built{0}, g_bytes{0};
// Indexes replaced by a newer one for the same header: never freed (a thread may still be reading
// one), kept reachable here.
std::atomic<Index*> g_retired{nullptr};

inline uint32_t SlotOf(uintptr_t hdr) { return uint32_t((hdr * 0x9E3779B97F4A7C15ull) >> 52); }
constexpr int kProbes = 16;

// The index of the header at `hdr`, or null. Lock-free.
const Index* Find(uintptr_t hdr) {
  for (uint32_t slot = SlotOf(hdr), probe = 0; probe < kProbes;
       ++probe, slot = (slot + 1) % kSlots) {
    const Index* cur = g_slots[slot].load(std::memory_order_acquire);
    if (!cur || cur->hdr == hdr) return cur;
  }
  return nullptr;
}

}  // namespace

bool BuildFdeIndex(uintptr_t eh_frame_hdr, const int32_t* table, uint64_t count) {
  if (count < 64 || count > (uint64_t{1} << 28)) return false;  // small tables: searched fast
  const int64_t base = table[0], last = table[2 * (count - 1)];
  if (last < base) return false;
  uint32_t shift = 12;
  while ((uint64_t(last - base) >> shift) + 1 > (uint64_t{1} << 20)) ++shift;
  const uint32_t pages = uint32_t((uint64_t(last - base) >> shift) + 1);
  // The same table indexed already (every module is prepared again after a dlclose): kept. (The
  // same span and count: the same table as far as it matters; every use checks its narrowed
  // bounds against the table anyway.)
  if (const Index* cur = Find(eh_frame_hdr);
      cur && cur->count == count && cur->base == base && cur->shift == shift && cur->pages == pages)
    return true;
  const size_t bytes = sizeof(Index) + sizeof(uint32_t) * pages;
  void* mem = std::malloc(bytes);
  if (!mem) return false;
  Index* index = new (mem) Index;
  index->hdr = eh_frame_hdr;
  index->count = count;
  index->base = base;
  index->shift = shift;
  index->pages = pages;
  uint64_t i = 0;
  for (uint32_t p = 0; p < pages; ++p) {
    const int64_t start = base + (int64_t(p) << shift);
    while (i + 1 < count && table[2 * (i + 1)] <= start) {
      if (table[2 * (i + 1)] < table[2 * i]) {  // not sorted: no index
        std::free(mem);
        return false;
      }
      ++i;
    }
    index->first[p] = uint32_t(i);
  }
  uint32_t slot = SlotOf(eh_frame_hdr);
  for (int probe = 0; probe < kProbes; ++probe, slot = (slot + 1) % kSlots) {
    const Index* cur = g_slots[slot].load(std::memory_order_acquire);
    if (cur && cur->hdr != eh_frame_hdr) continue;
    // Empty, or this header's older index (a module loaded again there): replaced; the old
    // one is left allocated (a thread may be reading it).
    if (g_slots[slot].compare_exchange_strong(cur, index, std::memory_order_acq_rel)) {
      if (cur) {  // (readers never read retired_next)
        Index* old = const_cast<Index*>(cur);
        Index* head = g_retired.load(std::memory_order_relaxed);
        do {
          old->retired_next = head;
        } while (!g_retired.compare_exchange_weak(head, old, std::memory_order_release,
                                                  std::memory_order_relaxed));
      }
      g_built.fetch_add(1, std::memory_order_relaxed);
      g_bytes.fetch_add(bytes, std::memory_order_relaxed);
      return true;
    }
  }
  std::free(mem);
  return false;
}

bool NarrowFdeSearch(uintptr_t eh_frame_hdr, int64_t rel_pc, uint64_t count, uint64_t* lo,
                     uint64_t* hi) {
  const Index* index = Find(eh_frame_hdr);
  if (!index || index->count != count || rel_pc < index->base) return false;
  const uint64_t p = uint64_t(rel_pc - index->base) >> index->shift;
  if (p >= index->pages) {
    *lo = index->first[index->pages - 1];
    *hi = count;
  } else {
    *lo = index->first[p];
    *hi = p + 1 < index->pages ? uint64_t(index->first[p + 1]) + 1 : count;
  }
  return *lo < *hi && *hi <= count;
}

FdeIndexCounts GetFdeIndexCounts() {
  return {g_narrowed.load(std::memory_order_relaxed), g_built.load(std::memory_order_relaxed),
          g_bytes.load(std::memory_order_relaxed)};
}

void CountNarrowedSearch() { g_narrowed.fetch_add(1, std::memory_order_relaxed); }

}  // namespace tracesmith::stacks
