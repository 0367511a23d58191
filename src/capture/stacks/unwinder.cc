#include "tracesmith/capture/stacks/unwinder.h"

#include <pthread.h>
#include <sys/mman.h>

#include <new>

#include <atomic>

#include "stack_hash.h"
#include "unwind_rule.h"

namespace tracesmith::capture::stacks {
namespace {

std::atomic<uint64_t> g_rules_computed{0};
std::atomic<uint64_t> g_fp_fallbacks{0};
std::atomic<uint64_t> g_cache_full{0};

// The thread's stack, [lo, hi). Reads below the unwinder's own rsp or at or
// above hi are refused. hi == 0: not yet known; hi == 1: unknown for good.
struct StackBounds {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};
thread_local StackBounds t_bounds;

[[gnu::noinline, gnu::cold]] void InitStackBounds(StackBounds* b) {
  b->hi = 1;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size != 0) {
    b->lo = reinterpret_cast<uintptr_t>(addr);
    b->hi = b->lo + size;
  }
  pthread_attr_destroy(&attr);
}

#if defined(__x86_64__)

// Return address -> packed UnwindRule, lock-free. 64K slots x 16 bytes =
// 1 MiB of address space, touched only where used; a large PyTorch process
// has a few thousand distinct return addresses on its launch paths.
constexpr int kCacheBits = 16;
constexpr uint64_t kCacheMask = (uint64_t{1} << kCacheBits) - 1;
constexpr int kMaxProbes = 8;

struct alignas(16) CacheSlot {
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> rule{0};
};
CacheSlot g_cache[1 << kCacheBits];

// The low 16 bits of return addresses are well spread; anything more is a
// longer chain of dependent work per frame (this feeds the next load).
// Modules whose code collides modulo 64 KiB share probe chains.
inline uint64_t SlotOf(uint64_t key) { return key & kCacheMask; }

[[gnu::noinline]] uint64_t ComputeAndCache(uint64_t key) {
  // key is a return address (or the unwinder's own pc + 1): the call
  // instruction, whose CFI row we need, ends at key - 1.
  uintptr_t pc = key - 1;
  UnwindRule rule = ComputeRuleFromEhFrameHdr(FindEhFrameHdr(pc), pc);
  g_rules_computed.fetch_add(1, std::memory_order_relaxed);
  if (rule.kind == RuleKind::kFramePointer) g_fp_fallbacks.fetch_add(1, std::memory_order_relaxed);
  uint64_t packed = rule.Pack();
  for (int i = 0; i < kMaxProbes; ++i) {
    CacheSlot& s = g_cache[(SlotOf(key) + i) & kCacheMask];
    uint64_t k = s.key.load(std::memory_order_relaxed);
    if (k == 0 && s.key.compare_exchange_strong(k, key, std::memory_order_relaxed)) k = key;
    if (k == key) {
      // Readers treat a zero rule as a miss, so claiming the key before the
      // rule is stored is harmless; racing writers store the same value.
      s.rule.store(packed, std::memory_order_release);
      return packed;
    }
  }
  g_cache_full.fetch_add(1, std::memory_order_relaxed);
  return packed;
}

inline uint64_t LookupRule(uint64_t key) {
  uint64_t slot = SlotOf(key);
  for (int i = 0; i < kMaxProbes; ++i) {
    CacheSlot& s = g_cache[(slot + i) & kCacheMask];
    uint64_t k = s.key.load(std::memory_order_relaxed);
    if (k == key) {
      uint64_t r = s.rule.load(std::memory_order_acquire);
      if (r != 0) return r;
      break;
    }
    if (k == 0) break;
  }
  return ComputeAndCache(key);
}

// A stack word. memcpy: addresses derived from a corrupt frame may be
// misaligned, which x86-64 reads fine but C++ calls undefined; this
// compiles to the same single load.
[[gnu::always_inline, gnu::no_sanitize_address]] inline uintptr_t ReadWord(uintptr_t addr) {
  uintptr_t v;
  __builtin_memcpy(&v, reinterpret_cast<const void*>(addr), sizeof(v));
  return v;
}

// addr..addr+8 within [lo, hi): one unsigned compare covers both ends.
// Alignment is not checked: x86-64 reads unaligned words without faulting.
inline bool InStack(uintptr_t addr, uintptr_t lo, uintptr_t hi) { return addr - lo <= hi - 8 - lo; }

// Reusing earlier walks. A thread's stacks repeat (every training step
// launches from the same places) and share frames (the module chain, and
// the profiler's, CUPTI's and the driver's frames inside every launch), but
// inside a real program each rule lookup of a fresh walk misses the cache
// (~35-50 ns a frame measured in a PyTorch step). So each thread records its
// walks step by step: the words each step read (return address, saved rbp)
// and where. A recorded walk is replayed after checking that every word it
// read still holds the same value at the same address. The walk is a
// deterministic function of its state (return address, rsp, and rbp where a
// rule reads it) and of the words it reads (rules depend only on the return
// address), so a replay that verifies gives exactly what a fresh walk would;
// the first word that differs resumes the fresh walk from there. Checks are
// independent loads of hot stack memory and a sequential read of the record.
// Three sources, in order:
//  1. the thread's walk table: the latest walk that started in the same
//     state (same call site and depth: the same launch one step earlier);
//  2. the thread's last walk, shifted by the difference of the starting rsp
//     (its innermost frames - ours, CUPTI's, the driver's - are the same for
//     every launch, at the caller's depth);
//  3. the last walk again, in place, once the new walk reaches a state it
//     was in (shared outer frames).
//
// rbp matters only to steps whose rule reads it (an rbp-based CFA, or the
// frame-pointer fallback); elsewhere it is carried over until a step
// restores it from the stack, so it is compared only where it is read:
// callers often keep loop counters or pointers in rbp.
struct WalkStep {
  uintptr_t ra_at;    // address the return address was read from (= CFA - 8)
  uint64_t ra;        // the return address read
  uintptr_t rbp_at;   // address the caller's rbp was read from; 0: not read
  uintptr_t rbp_in;   // rbp before this step, when the rule reads it
  bool uses_rbp;
};
constexpr int kMaxSteps = 512;
// A recorded walk.
struct WalkRef {
  const WalkStep* steps = nullptr;
  int n = 0;
  bool complete = false;  // it ended by itself (not at max_frames)
  uint64_t key0 = 0;      // its starting state
  uintptr_t rsp0 = 0;
};
// 4096 walks, 8 MiB of records per thread (mapped lazily, touched as used):
// a training step has a few hundred launch sites of ~50 steps (2.4 KiB).
constexpr int kTableBits = 12;
constexpr size_t kArenaBytes = size_t{8} << 20;
struct WalkMemo {
  WalkStep buf[2][kMaxSteps];  // the walk being recorded, and possibly the last one
  WalkRef last;
  uint32_t table[1u << kTableBits];  // arena offset / 8 + 1 of a WalkRef + steps; 0: none
  uint8_t* arena = nullptr;
  size_t arena_used = 0;
  bool busy = false;  // a walk is using the memo (a signal handler's walk skips it)
  uint64_t steps_reused = 0, steps_walked = 0;
};
thread_local WalkMemo* t_memo = nullptr;

// mmap, not malloc: the first walk of a thread may run in a signal handler.
[[gnu::noinline, gnu::cold]] WalkMemo* NewWalkMemo() {
  void* p = mmap(nullptr, sizeof(WalkMemo) + kArenaBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  WalkMemo* m = new (p) WalkMemo();
  m->arena = static_cast<uint8_t*>(p) + sizeof(WalkMemo);
  return m;
}

inline uint32_t TableSlot(uint64_t key0, uintptr_t rsp0) {
  uint64_t h = (key0 ^ (uint64_t(rsp0) * 0x9E3779B97F4A7C15ull)) * 0xff51afd7ed558ccdull;
  return uint32_t(h >> (64 - kTableBits));
}

WalkRef FindWalk(const WalkMemo* m, uint64_t key0, uintptr_t rsp0) {
  uint32_t at = m->table[TableSlot(key0, rsp0)];
  if (!at) return {};
  const auto* r = reinterpret_cast<const WalkRef*>(m->arena + size_t(at - 1) * 8);
  if (r->key0 != key0 || r->rsp0 != rsp0) return {};
  return *r;
}

// Copies a recorded walk into the arena and the table; the returned ref
// points into the arena. Starts the arena over when it is full.
[[gnu::noinline]] WalkRef StoreWalk(WalkMemo* m, const WalkRef& w) {
  size_t bytes = sizeof(WalkRef) + size_t(w.n) * sizeof(WalkStep);
  if (m->arena_used + bytes > kArenaBytes) {
    __builtin_memset(m->table, 0, sizeof(m->table));
    m->arena_used = 0;
  }
  uint8_t* at = m->arena + m->arena_used;
  WalkRef stored = w;
  stored.steps = reinterpret_cast<const WalkStep*>(at + sizeof(WalkRef));
  __builtin_memcpy(at, &stored, sizeof(WalkRef));
  __builtin_memcpy(at + sizeof(WalkRef), w.steps, size_t(w.n) * sizeof(WalkStep));
  m->table[TableSlot(w.key0, w.rsp0)] = uint32_t(m->arena_used / 8 + 1);
  m->arena_used += (bytes + 7) & ~size_t{7};
  return stored;
}

#endif  // __x86_64__

// The walk, inlined into each public entry point so that the register
// snapshot below is taken in the function whose frame is the innermost one.
inline bool InRanges(uint64_t pc, const CodeRange* r, int n) {
  for (int i = 0; i < n; ++i)
    if (pc - 1 - r[i].start < r[i].end - r[i].start) return true;
  return false;
}

// The walk reads other frames' stack slots on purpose: ASan would report
// those reads as overflows of the frames' locals, so it is not instrumented.
template <bool kHash>
[[gnu::always_inline, gnu::no_sanitize_address]] inline int Walk(uint64_t* pcs, int max_frames,
                                                                 int skip, const CodeRange* trim,
                                                                 int n_trim, uint64_t* hash) {
  // One TLS access (__tls_get_addr in a shared library), copied to locals.
  StackBounds* tls = &t_bounds;
  if (__builtin_expect(tls->hi == 0, 0)) InitStackBounds(tls);
  const StackBounds b = *tls;
  uint64_t h = kStackHashSeed;
  int n = 0;
  if (max_frames <= 0) {
    if constexpr (kHash) *hash = StackHashFinish(h, 0);
    return 0;
  }
  skip = skip < 0 ? 0 : skip;
#if defined(__x86_64__)
  uintptr_t rip, rsp, rbp;
  // One asm block so that rip, rsp and rbp describe the same instant: the
  // CFI row for `rip` (the next instruction) describes exactly this rsp.
  asm volatile(
      "lea 0(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2"
      : "=r"(rip), "=r"(rsp), "=r"(rbp));
  const uintptr_t lo = rsp;
  const uintptr_t hi = b.hi;
  // Unknown bounds, or a stack other than the thread's (a coroutine's).
  if (hi > lo && rsp >= b.lo) {
    WalkMemo* memo = t_memo;
    if (__builtin_expect(memo == nullptr, 0)) memo = t_memo = NewWalkMemo();
    if (memo && memo->busy) memo = nullptr;  // re-entered from a signal handler
    if (memo) memo->busy = true;
    const WalkRef last = memo ? memo->last : WalkRef{};
    // This walk records into the buffer the last walk is not in.
    WalkStep* rec = memo ? memo->buf[last.steps == memo->buf[0] ? 1 : 0] : nullptr;
    int n_rec = 0, j = 0;  // j: next step of the last walk that could match in place
    bool natural_end = false, walk_done = false;
    const WalkRef* reused_whole = nullptr;  // a recorded walk that held entirely
    uint64_t key = rip + 1;  // the rule lookup subtracts 1, as for return addresses
    const uint64_t key0 = key;
    const uintptr_t rsp0 = rsp;
    // Takes a return address the walk produced; false when the walk is done.
    auto emit = [&](uint64_t ra) -> bool {
      if (skip > 0) {
        --skip;
        return true;
      }
      if (n_trim > 0) {
        if (n == 0 && InRanges(ra, trim, n_trim)) return true;
        n_trim = 0;  // trimming stops at the first frame kept
      }
      pcs[n++] = ra;
      if constexpr (kHash) h = StackHashStep(h, ra);
      return n < max_frames;
    };
    // Replays steps j0.. of `src` at addresses shifted by `off` while their
    // reads verify; false when the walk is done.
    auto replay = [&](const WalkRef& src, int j0, uintptr_t off) -> bool {
      int k = j0;
      uintptr_t cur_rbp = rbp;
      for (; k < src.n; ++k) {
        const WalkStep& st = src.steps[k];
        if (st.uses_rbp && cur_rbp != st.rbp_in + off) break;
        if (!InStack(st.ra_at + off, lo, hi) || ReadWord(st.ra_at + off) != st.ra) break;
        if (st.rbp_at) {
          if (!InStack(st.rbp_at + off, lo, hi)) break;
          cur_rbp = ReadWord(st.rbp_at + off);
        }
      }
      // The whole recorded walk holds again, in place: nothing new to record.
      const bool whole = j0 == 0 && off == 0 && n_rec == 0 && k == src.n && src.complete;
      bool more = true;
      int i = j0;
      for (; i < k && more; ++i) {
        const WalkStep& st = src.steps[i];
        uintptr_t in = rbp;
        if (st.rbp_at) rbp = ReadWord(st.rbp_at + off);
        if (!whole) {
          if (n_rec < kMaxSteps)
            rec[n_rec] = WalkStep{st.ra_at + off, st.ra, st.rbp_at ? st.rbp_at + off : 0, in,
                                  st.uses_rbp};
          ++n_rec;
        }
        if (st.ra < 4096) {
          natural_end = true;
          break;
        }
        more = emit(st.ra);
      }
      memo->steps_reused += uint64_t(i - j0);
      if (whole && i == k) reused_whole = &src;
      if (!more || natural_end) return false;
      if (k == src.n && src.complete) {
        natural_end = true;
        return false;
      }
      // Resume the fresh walk after the last verified step (rbp is already
      // that step's).
      if (k > j0) {
        key = src.steps[k - 1].ra;
        rsp = src.steps[k - 1].ra_at + off + 8;
      }
      return true;
    };
    WalkRef site;
    if (memo) site = FindWalk(memo, key, rsp);
    if (site.steps) {
      walk_done = !replay(site, 0, 0);
    } else if (last.n && key == last.key0) {
      walk_done = !replay(last, 0, rsp - last.rsp0);
    }
    for (; !walk_done;) {
      if (j < last.n) {
        // Then the outer frames, in place: the state before last step j is
        // the initial one or the one after step j-1.
        uintptr_t lrsp = 0;
        while (j < last.n && (lrsp = j ? last.steps[j - 1].ra_at + 8 : last.rsp0) < rsp) ++j;
        if (j < last.n && lrsp == rsp && key == (j ? last.steps[j - 1].ra : last.key0)) {
          if (!replay(last, j, 0)) break;
          j = last.n;  // the walks differ from here on
        }
      }
      UnwindRule r = UnwindRule::Unpack(LookupRule(key));
      uintptr_t cfa, ra, ra_at, rbp_at = 0;
      const uintptr_t rbp_in = rbp;
      const bool uses_rbp = r.kind == RuleKind::kFramePointer || (r.kind == RuleKind::kCfa && r.cfa_is_rbp);
      if (__builtin_expect(r.kind == RuleKind::kCfa, 1)) {
        cfa = (r.cfa_is_rbp ? rbp : rsp) + uintptr_t(intptr_t(r.cfa_offset));
        if (!InStack(cfa - 8, lo, hi) || cfa <= rsp) {
          natural_end = true;
          break;
        }
        ra_at = cfa - 8;
        ra = ReadWord(ra_at);
        if (r.rbp_saved) {
          uintptr_t at = cfa + uintptr_t(intptr_t(r.rbp_offset));
          if (!InStack(at, lo, hi)) {
            natural_end = true;
            break;
          }
          rbp_at = at;
          rbp = ReadWord(at);
        }
      } else if (r.kind == RuleKind::kFramePointer) {
        if (!InStack(rbp, lo, hi) || !InStack(rbp + 8, lo, hi) || rbp < rsp) {
          natural_end = true;
          break;
        }
        cfa = rbp + 16;
        ra_at = rbp + 8;
        ra = ReadWord(ra_at);
        rbp_at = rbp;
        rbp = ReadWord(rbp_at);
      } else {
        natural_end = true;
        break;  // kEnd
      }
      if (memo) {
        ++memo->steps_walked;
        if (n_rec < kMaxSteps) rec[n_rec] = WalkStep{ra_at, ra, rbp_at, rbp_in, uses_rbp};
        ++n_rec;
      }
      // Return addresses in the zero page cannot be code; this also ends
      // the walk at the null return address some thread entry points push.
      if (ra < 4096) {
        natural_end = true;
        break;
      }
      rsp = cfa;
      key = ra;
      if (!emit(ra)) break;
    }
    if (memo) {
      // A walk that verified a whole recorded walk leaves the records as
      // they are; a walk too long to record leaves nothing to reuse.
      if (reused_whole) {
        memo->last = *reused_whole;
      } else if (n_rec <= kMaxSteps) {
        WalkRef w{rec, n_rec, natural_end, key0, rsp0};
        memo->last = w;
        if (n_rec > 0) StoreWalk(memo, w);
      } else {
        memo->last = WalkRef{};
      }
      memo->busy = false;
    }
  }
#else
  // Frame-pointer walk: [fp] = caller's fp, [fp + 8] = return address.
  uintptr_t fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t lo = fp, hi = b.hi;
  while (hi > 1 && fp >= lo && fp + 16 <= hi && (fp & 7) == 0) {
    uintptr_t next = reinterpret_cast<const uintptr_t*>(fp)[0];
    uintptr_t ra = reinterpret_cast<const uintptr_t*>(fp)[1];
    if (ra < 4096) break;
    if (skip > 0) {
      --skip;
    } else if (n_trim > 0 && n == 0 && InRanges(ra, trim, n_trim)) {
      // trimmed
    } else {
      pcs[n++] = ra;
      if constexpr (kHash) h = StackHashStep(h, ra);
      if (n == max_frames) break;
    }
    if (next <= fp) break;
    fp = next;
  }
#endif
  if constexpr (kHash) *hash = StackHashFinish(h, n);
  return n;
}

}  // namespace

[[gnu::noinline, gnu::no_sanitize_address]] int UnwindNative(uint64_t* pcs, int max_frames,
                                                             int skip) {
  return Walk<false>(pcs, max_frames, skip, nullptr, 0, nullptr);
}

[[gnu::noinline, gnu::no_sanitize_address]] int UnwindNativeHashed(uint64_t* pcs, int max_frames,
                                                                   int skip, const CodeRange* trim,
                                                                   int n_trim, uint64_t* hash) {
  return Walk<true>(pcs, max_frames, skip, trim, n_trim, hash);
}

UnwindStats GetUnwindStats() {
  UnwindStats s;
#if defined(__x86_64__)
  if (const WalkMemo* m = t_memo) {
    s.thread_steps_reused = m->steps_reused;
    s.thread_steps_walked = m->steps_walked;
  }
#endif
  s.rules_computed = g_rules_computed.load(std::memory_order_relaxed);
  s.fp_fallbacks = g_fp_fallbacks.load(std::memory_order_relaxed);
  s.cache_full = g_cache_full.load(std::memory_order_relaxed);
  return s;
}

}  // namespace tracesmith::capture::stacks
