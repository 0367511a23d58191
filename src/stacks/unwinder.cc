#include "tracesmith/stacks/unwinder.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <optional>

#include "fde_index.h"
#include "proc_maps.h"
#include "stack_hash.h"
#include "tracesmith/base/first_time_cost.h"
#include "tracesmith/base/hot_path.h"
#include "unwind_rule.h"
#include "walk_memo.h"

namespace tracesmith::stacks {
namespace {

std::atomic<uint64_t> g_rules_computed{0};
std::atomic<uint64_t> g_fp_fallbacks{0};
std::atomic<uint64_t> g_cache_full{0};

// The thread's stack, [lo, hi). Reads below the unwinder's own rsp or at or
// above hi are refused. hi == 0: not yet known; hi == 1: unknown for good.
// top: where glibc's layout puts the stack's top while only the part below hi
// has been checked readable (0: nothing more to check). A walk that needs
// more checks the rest then (GrowStackBoundsUp).
struct StackBounds {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  uintptr_t top = 0;
};
thread_local StackBounds t_bounds;

// The stack's top as glibc lays it out, or 0: a thread made by pthread_create
// has its descriptor (the thread pointer) at the top of its stack block, the
// stack just below it; the main thread's stack ends on the page that holds
// __libc_stack_end (argc, at process start). 1 GiB: farther than any stack.
#if defined(__GLIBC__) && defined(__x86_64__)
extern "C" void* __libc_stack_end;
uintptr_t GlibcStackTop(uintptr_t sp) {
  constexpr uintptr_t kFar = uintptr_t{1} << 30;
  uintptr_t self;
  asm("mov %%fs:0, %0" : "=r"(self));  // pthread_self(), without the call
  if (self > sp && self - sp < kFar) return self;
  const uintptr_t main_end = (reinterpret_cast<uintptr_t>(__libc_stack_end) | 4095) + 1;
  if (main_end > sp && main_end - sp < kFar) return main_end;
  return 0;
}
#else
uintptr_t GlibcStackTop(uintptr_t) { return 0; }
#endif

// [from, to) is readable now: process_vm_readv of our own memory copies it,
// and answers EFAULT where a page is unmapped or PROT_NONE (a guard page)
// instead of faulting. One call per 256 KiB, into one 4-KiB buffer on the
// stack (the kernel writes it over and over; 5 KiB of stack in all, on the
// small stacks of runtime threads). Async-signal-safe. Once the system call
// is refused (seccomp, a kernel without it) it is not tried again.
std::atomic<bool> g_readv_refused{false};
bool Readable(uintptr_t from, uintptr_t to) {
  if (g_readv_refused.load(std::memory_order_relaxed)) return false;
  // One byte of each page: readability is a page's, and copying whole pages
  // (the used stack of a thread deep in Python, hundreds of KiB) took the
  // thread's first walk 19-24 us on an H200's VM (2026-11-30); the kernel
  // stops at the first page it cannot read, so every page was read if every
  // byte was.
  constexpr size_t kIov = 512;  // pages per call (IOV_MAX is 1024)
  char scratch[kIov];
  struct iovec remote[kIov];
  const pid_t pid = pid_t(syscall(SYS_getpid));
  const int saved = errno;
  bool ok = true;
  from &= ~uintptr_t{4095};
  while (ok && from < to) {
    size_t n = 0;
    for (; n < kIov && from < to; ++n, from += 4096)
      remote[n] = iovec{reinterpret_cast<void*>(from), 1};
    const iovec one = {scratch, n};
    const ssize_t got = syscall(SYS_process_vm_readv, pid, &one, 1, remote, n, 0);
    if (got < 0 && (errno == ENOSYS || errno == EPERM))
      g_readv_refused.store(true, std::memory_order_relaxed);
    ok = got == ssize_t(n);
  }
  errno = saved;
  return ok;
}

std::atomic<uint64_t> g_bounds_from_maps{0};
// The most stack checked readable at once (a thread's first walk deep in a
// recursion, or a walk far below its earlier ones; a used stack is usually
// tens of KiB): 16 MiB, ~2 ms of copying. More is read from /proc/self/maps
// or left unwalked.
constexpr uintptr_t kMaxChecked = uintptr_t{16} << 20;
// A thread's first walk checks this much of its stack above it at first: a
// mixed walk under Python ends at the innermost eval-loop frame, a few KiB up,
// while the main thread of a PyTorch program has hundreds of KiB of stack in
// use (checking all of it took 12-23 us of one CUDA call on an H200's VM,
// 2026-11-30).
constexpr uintptr_t kFirstChecked = uintptr_t{64} << 10;

// The first walk on a thread may run in a signal handler (or a CUDA callback
// that interrupted malloc), so this uses only async-signal-safe calls. The
// stack's top is where glibc put it (GlibcStackTop), checked readable from
// here up; the bottom, for now, is this frame's page, extended as walks go
// deeper (ExtendStackBounds). /proc/self/maps, read otherwise, costs the
// thread ~0.3 ms per 1,000 mappings, 2-3 ms with 8,000 (a large CUDA process
// has thousands; docs/benchmarks.md, "First-time work"): the kernel formats
// every line up to the stack's. pthread_getattr_np, used before that, allocates
// and, for the main thread, reads /proc/self/maps through stdio.
[[gnu::noinline, gnu::cold]] void InitStackBounds(StackBounds* b) {
  FirstTimeWork first_time(FirstTimeKind::kBounds);
  // On an alternate signal stack the stack pointer says nothing about the
  // thread's own stack: the bounds stay unknown for now (this walk reads
  // nothing, as it would with the thread's bounds) and the thread's next walk
  // outside the handler finds them.
  stack_t alt;
  if (sigaltstack(nullptr, &alt) == 0 && (alt.ss_flags & SS_ONSTACK)) return;
  b->hi = 1;
  const uintptr_t sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) & ~uintptr_t{4095};
  if (uintptr_t top = GlibcStackTop(sp); top && top - sp <= kMaxChecked) {
    const uintptr_t first = top - sp > kFirstChecked ? sp + kFirstChecked : top;
    if (Readable(sp, first)) {
      b->lo = sp;
      b->hi = first;
      b->top = first < top ? top : 0;
      return;
    }
  }
  g_bounds_from_maps.fetch_add(1, std::memory_order_relaxed);
  MappingOf m;
  if (!FindMappingOf(sp, &m)) return;
  b->lo = m.start;
  b->hi = m.end;
  if (m.main_stack) {
    // The main thread's stack grows on demand, down to RLIMIT_STACK below its
    // top or to the mapping below it, as glibc reports it. getrlimit is a
    // plain system call.
    b->lo = m.below;
    struct rlimit limit;
    if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        limit.rlim_cur < m.end - m.below)
      b->lo = m.end - limit.rlim_cur;
    if (b->lo > m.start) b->lo = m.start;  // the limit was lowered since
  }
}

// A walk below the bounds' bottom (deeper than the thread's walks so far,
// rare after the first few): the stack from its page up to the bottom is
// checked readable and the bottom moves down to it. A PROT_NONE guard page
// in between (another stack below this one's guard: the kernel leaves a
// gap below the main thread's, glibc a guard page below a thread's) leaves
// the bounds as they were: that walk reads nothing.
[[gnu::noinline, gnu::cold]] void ExtendStackBounds(StackBounds* b, uintptr_t rsp) {
  FirstTimeWork first_time(FirstTimeKind::kBounds);
  stack_t alt;  // (a signal handler's stack is not the thread's)
  if (sigaltstack(nullptr, &alt) == 0 && (alt.ss_flags & SS_ONSTACK)) return;
  const uintptr_t page = rsp & ~uintptr_t{4095};
  if (page < b->lo && b->lo - page <= kMaxChecked && Readable(page, b->lo)) b->lo = page;
}

// A walk that needs the stack above the part checked so far: the rest up to
// glibc's top is checked readable, once. Where it is not, the bounds stay
// (walks end there, as at an unknown bound). The new top.
[[gnu::noinline, gnu::cold]] uintptr_t GrowStackBoundsUp(StackBounds* b) {
  FirstTimeWork first_time(FirstTimeKind::kBounds);
  const uintptr_t top = b->top;
  b->top = 0;
  if (top > b->hi && top - b->hi <= kMaxChecked && Readable(b->hi, top)) b->hi = top;
  return b->hi;
}

// pc (a return address) in one of the `n` ranges `r`.
inline bool InRanges(uint64_t pc, const CodeRange* r, int n) {
  for (int i = 0; i < n; ++i)
    if (pc - 1 - r[i].start < r[i].end - r[i].start) return true;
  return false;
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

// A slot whose key is claimed by a walk that handed its cold part off (ColdStop): readers treat
// it as a miss and compute the rule. Not a rule Pack() makes (its kind, kInvalid, is never
// stored).
constexpr uint64_t kPendingRule = uint64_t{1} << 4;

// `timed`: first-time work of the calling thread (a program's thread), not the writer's.
[[gnu::noinline]] uint64_t ComputeAndCache(uint64_t key, bool timed = true) {
  // key is a return address (or the unwinder's own pc + 1): the call
  // instruction, whose CFI row we need, ends at key - 1.
  std::optional<FirstTimeWork> first_time;
  if (timed) first_time.emplace(FirstTimeKind::kRule);
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

}  // namespace

void PrepareRuleCache() {
  // MADV_POPULATE_WRITE (Linux 5.14): the pages made present and writable
  // without writing them, so slots that threads fill meanwhile keep their
  // values. Without it the pages stay as they are (faulted in as used).
  void* at = reinterpret_cast<void*>(uintptr_t(&g_cache[0]) & ~uintptr_t{4095});
  const size_t bytes = uintptr_t(&g_cache[1 << kCacheBits]) - uintptr_t(at);
  (void)madvise(at, bytes, 23 /* MADV_POPULATE_WRITE */);
}

namespace {

inline uint64_t LookupRule(uint64_t key, bool timed = true) {
  uint64_t slot = SlotOf(key);
  for (int i = 0; i < kMaxProbes; ++i) {
    CacheSlot& s = g_cache[(slot + i) & kCacheMask];
    uint64_t k = s.key.load(std::memory_order_relaxed);
    if (k == key) {
      uint64_t r = s.rule.load(std::memory_order_acquire);
      if (r != 0 && r != kPendingRule) return r;
      break;
    }
    if (k == 0) break;
  }
  return ComputeAndCache(key, timed);
}

// LookupRule for a walk that may hand its cold part off: 0 when `key` has no rule and this call
// claimed it pending (the caller stops there); a rule otherwise, computed here when another
// walk claimed the key before (or the probe chain is full).
[[gnu::noinline]] uint64_t LookupOrClaimRule(uint64_t key) {
  uint64_t slot = SlotOf(key);
  for (int i = 0; i < kMaxProbes; ++i) {
    CacheSlot& s = g_cache[(slot + i) & kCacheMask];
    uint64_t k = s.key.load(std::memory_order_relaxed);
    if (k == 0 && s.key.compare_exchange_strong(k, key, std::memory_order_relaxed)) {
      uint64_t none = 0;
      if (s.rule.compare_exchange_strong(none, kPendingRule, std::memory_order_relaxed)) {
        return 0;
      }
      return none != kPendingRule ? none : ComputeAndCache(key);
    }
    if (k == key) {
      uint64_t r = s.rule.load(std::memory_order_acquire);
      if (r != 0 && r != kPendingRule) return r;
      return ComputeAndCache(key);  // (claimed by another walk, or being stored)
    }
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

// How many of `count` recorded steps a walk now at the state they followed
// would take: each step holds while the return address it read still holds
// and, where it used the incoming rbp (frame-pointer and rbp-based rules),
// that rbp is the recorded one. A saved rbp that is read is compared only
// where it is used: in code without frame pointers rbp is an ordinary
// register, its saved value differs from call to call, and most of the
// time no frame above uses it. `rbp` is the walk's rbp now (for the state
// whose recorded rbp was `recorded_rbp`); *rbp_after is set to the walk's
// rbp after the steps that hold. With `stop`, the steps end after the first
// whose return address is in it (*ends set): the walk ends there (mixed
// stacks; an entry recorded without the stop replays only up to there).
[[gnu::always_inline, gnu::no_sanitize_address]] inline int MemoHolds(
    const MemoStep* steps, int count, uint64_t recorded_rbp, uintptr_t rbp, uintptr_t lo,
    uintptr_t hi, uintptr_t* rbp_after, const CodeRange* stop, bool* ends) {
  int k = 0;
  while (k < count) {
    const MemoStep& st = steps[k];
    if ((st.flags & MemoStep::kUsesRbp) && rbp != recorded_rbp) break;
    if (!InStack(st.cfa - 8, lo, hi) || ReadWord(st.cfa - 8) != st.ra) break;
    if (st.flags & MemoStep::kReadRbp) {
      uintptr_t at = st.cfa + uintptr_t(intptr_t(st.rbp_from));
      if (!InStack(at, lo, hi)) break;
      rbp = ReadWord(at);
    }
    recorded_rbp = st.rbp;
    ++k;
    if (stop && InRanges(st.ra, stop, 1)) {
      *ends = true;
      break;
    }
  }
  *rbp_after = rbp;
  return k;
}

#endif  // __x86_64__

// The walk, inlined into each public entry point so that the register
// snapshot below is taken in the function whose frame is the innermost one.

// The walk reads other frames' stack slots on purpose: ASan would report
// those reads as overflows of the frames' locals, so it is not instrumented.
[[gnu::always_inline, gnu::no_sanitize_address]] inline int Walk(
    uint64_t* pcs, int max_frames, int skip, const CodeRange* trim, int n_trim,
    const CallerFrame* from, WalkMemo* memo, MemoEntry** whole_out, const CodeRange* stop,
    ColdStop* cold) {
  // One TLS access (__tls_get_addr in a shared library), copied to locals.
  StackBounds* tls = &t_bounds;
  if (__builtin_expect(tls->hi == 0, 0)) InitStackBounds(tls);
  StackBounds b = *tls;
  int n = 0;
  if (max_frames <= 0) return 0;
  skip = skip < 0 ? 0 : skip;
  // Keeps `ra` unless skipped or trimmed; false once pcs is full.
  auto keep = [&](uint64_t ra) {
    if (skip > 0) {
      --skip;
      return true;
    }
    if (n_trim > 0) {
      if (n == 0 && InRanges(ra, trim, n_trim)) return true;
      n_trim = 0;  // trimming stops at the first frame kept
    }
    pcs[n++] = ra;
    return n < max_frames;
  };
#if defined(__x86_64__)
  uintptr_t rip, rsp, rbp;
  // One asm block so that rip, rsp and rbp describe the same instant: the
  // CFI row for `rip` (the next instruction) describes exactly this rsp.
  asm volatile(
      "lea 0(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2"
      : "=r"(rip), "=r"(rsp), "=r"(rbp));
  // Deeper than the thread's walks so far: the bounds' bottom moves down.
  if (__builtin_expect(rsp < b.lo, 0) && b.hi > rsp) {
    ExtendStackBounds(tls, rsp);
    b = *tls;
  }
  const uintptr_t lo = rsp;
  uintptr_t hi = b.hi;
  // A read above the part of the stack checked so far (below glibc's top): the rest is
  // checked, once per thread.
  auto in_stack = [&](uintptr_t addr) {
    if (InStack(addr, lo, hi)) return true;
    if (__builtin_expect(tls->top == 0, 1) || addr < hi - 8) return false;
    hi = GrowStackBoundsUp(tls);
    return InStack(addr, lo, hi);
  };
  // Higher on the stack than the part checked so far (the thread's first walk was deeper, and
  // its walks since have not read above it): the rest is checked now.
  if (__builtin_expect(lo + 8 > hi, 0) && tls->top > lo) hi = GrowStackBoundsUp(tls);
  // Unknown bounds, or a stack other than the thread's (a coroutine's).
  if (hi > lo && rsp >= b.lo) {
    uint64_t key = rip + 1;  // the rule lookup subtracts 1, as for return addresses
    // The caller's frame, when it is plausible (its return address sits just
    // below its cfa, inside this stack); otherwise the walk starts here.
    if (from && from->ra && in_stack(from->cfa - 8) && from->cfa > rsp && from->ra >= 4096) {
      skip = 0;
      rsp = from->cfa;
      rbp = from->rbp;
      key = from->ra;
      if (!keep(key)) return n;
    }
    // The memo (walk_memo.h): keyed by the walk's first state, it replays
    // the steps of an earlier walk from there while the stack words they
    // read still hold (frames skipped or trimmed included: keep() applies to
    // replayed frames as to unwound ones). Where they stop holding (another
    // caller at that depth), the walk unwinds until it reaches a frame of
    // that walk again (the common caller, at the same address) and replays
    // from there.
    MemoStep steps[kMemoSteps];  // this walk's steps, for a new entry
    int n_steps = 0, replayed = 0;
    bool whole = false, ends_at_rule = false, full = false;
    const uint64_t first_cfa = rsp, first_ra = key, first_rbp = rbp;
    const MemoEntry* rejoin = nullptr;      // the walk to rejoin after a divergence
    MemoEntry* whole_entry = nullptr;       // the entry replayed whole
    const MemoEntry* held_entry = nullptr;  // an entry all of whose steps held
    int rj = 0;                             // its next step not below the walk
    // With `stop`, the walk ends after the first frame kept in it (the
    // interpreter's eval loop: the Python frames stand for what is above);
    // MemoHolds checks replayed steps for it.
    bool stopped = false;
    // An entry replayed whole whose walk goes on (one made with a stop,
    // replayed without): the new entry starts with its steps, copied when
    // the first step after them is unwound.
    const MemoStep* copy_first = nullptr;
    // Takes up to `held` steps of `src`, after which the walk's rbp is
    // `rbp_after`, until pcs is full.
    auto take = [&](const MemoStep* src, int held, uintptr_t rbp_after, bool keep_steps) {
      int k = 0;
      // Frames to skip or trim come first, one at a time; the rest is copied.
      while (k < held && (skip > 0 || n_trim > 0)) {
        if (!keep(src[k++].ra)) {
          full = true;
          break;
        }
      }
      if (!full && k < held) {
        int m = held - k < max_frames - n ? held - k : max_frames - n;
        for (int i = 0; i < m; ++i) pcs[n + i] = src[k + i].ra;
        n += m;
        k += m;
        full = n >= max_frames;
      }
      if (keep_steps) {
        int room = kMemoSteps - n_steps < k ? kMemoSteps - n_steps : k;
        if (room > 0) __builtin_memcpy(steps + n_steps, src, sizeof(MemoStep) * size_t(room));
      }
      n_steps += k;
      replayed += k;
      rsp = src[k - 1].cfa;
      key = src[k - 1].ra;
      rbp = rbp_after;  // (not the state after step k when pcs filled up: the walk ends)
    };
    if (memo) {
      const int set_index = MemoSet(rsp, key);
      const MemoTags& tags = memo->tags[set_index];
      MemoEntry* set = &memo->entries[set_index * kMemoWays];
      MemoEntry* best = nullptr;
      int best_held = 0;
      bool best_ends = false;
      uintptr_t best_rbp = rbp;
      for (int w = 0; w < kMemoWays; ++w) {
        if (tags.ra[w] != key || tags.cfa[w] != rsp) continue;
        MemoEntry* e = &set[w];
        uintptr_t after;
        bool ends = false;
        int held = MemoHolds(e->steps, e->n, e->rbp, rbp, lo, hi, &after, stop, &ends);
        // The most steps; of as many, an entry replayed whole.
        if (!best || held > best_held ||
            (held == best_held && held == int(e->n) && best_held != int(best->n)))
          best_held = held, best = e, best_rbp = after, best_ends = ends;
      }
      // Without an entry for this first state, the thread's previous walk
      // (most likely from the same caller) is the one to rejoin.
      rejoin = best ? best : memo->last;
      if (best) {
        best->stamp = ++memo->clock;
        whole = best_held == int(best->n);
        if (whole) held_entry = best;
        stopped = best_ends;
        if (best_held > 0) take(best->steps, best_held, best_rbp, !whole);
        whole = whole && !full;
        ends_at_rule = whole && best->ends_at_rule;
        rj = best_held;
        if (whole) rejoin = nullptr, memo->last = best, whole_entry = best;
        if (whole && best_held > 0) copy_first = best->steps;
      }
    }
    // The recorded walk ended at a rule without a caller (kEnd): so does
    // this one, from the same last frame.
    if (ends_at_rule) key = 0;
    while (!full && !stopped && n < max_frames && key != 0) {
      uint64_t packed;
      if (cold && skip == 0 && n_trim == 0 && n > 0) {
        packed = LookupOrClaimRule(key);
        if (packed == 0) {  // first sighting: the rest is unwound from a copy (ColdStop)
          *cold = ColdStop{true, rsp, rbp, key};
          break;
        }
      } else {
        packed = LookupRule(key);
      }
      UnwindRule r = UnwindRule::Unpack(packed);
      uintptr_t cfa, ra;
      MemoStep st{0, 0, 0, 0, 0};
      if (__builtin_expect(r.kind == RuleKind::kCfa, 1)) {
        cfa = (r.cfa_is_rbp ? rbp : rsp) + uintptr_t(intptr_t(r.cfa_offset));
        if (!in_stack(cfa - 8) || cfa <= rsp) break;
        ra = ReadWord(cfa - 8);
        if (r.cfa_is_rbp) st.flags = MemoStep::kUsesRbp;
        if (r.rbp_saved) {
          uintptr_t at = cfa + uintptr_t(intptr_t(r.rbp_offset));
          if (!in_stack(at)) break;
          rbp = ReadWord(at);
          st.flags |= MemoStep::kReadRbp;
          st.rbp_from = r.rbp_offset;
        }
      } else if (r.kind == RuleKind::kFramePointer) {
        if (!in_stack(rbp) || !in_stack(rbp + 8) || rbp < rsp) break;
        cfa = rbp + 16;
        ra = ReadWord(rbp + 8);
        rbp = ReadWord(rbp);
        st.flags = MemoStep::kUsesRbp | MemoStep::kReadRbp;
        st.rbp_from = -16;
      } else {
        ends_at_rule = r.kind == RuleKind::kEnd;
        break;
      }
      // Return addresses in the zero page cannot be code; this also ends
      // the walk at the null return address some thread entry points push.
      if (ra < 4096) break;
      rsp = cfa;
      key = ra;
      st.cfa = cfa, st.ra = ra, st.rbp = rbp;
      if (copy_first) {
        __builtin_memcpy(steps, copy_first,
                         sizeof(MemoStep) * size_t(n_steps < kMemoSteps ? n_steps : kMemoSteps));
        copy_first = nullptr;
      }
      if (n_steps < kMemoSteps) steps[n_steps] = st;
      ++n_steps;
      if (!keep(ra)) break;
      if (stop && InRanges(ra, stop, 1)) {
        stopped = true;
        break;
      }
      if (rejoin) {
        while (rj < int(rejoin->n) && rejoin->steps[rj].cfa < rsp) ++rj;
        if (rj >= int(rejoin->n)) {
          rejoin = nullptr;
        } else if (rejoin->steps[rj].cfa == rsp && rejoin->steps[rj].ra == key) {
          const MemoStep* from_step = &rejoin->steps[rj];
          uintptr_t after;
          int held = MemoHolds(from_step + 1, int(rejoin->n) - rj - 1, from_step->rbp, rbp, lo, hi,
                               &after, stop, &stopped);
          if (held > 0) take(from_step + 1, held, after, true);
          rj += held + 1;
        }
      }
    }
    if (cold && cold->stopped) {
      // Not a whole walk: nothing remembered (the memo would replay it as one).
      if (memo)
        MemoCount(memo, replayed > 0 ? MemoOutcome::kPartial : MemoOutcome::kMiss, replayed,
                  n_steps - replayed);
    } else if (memo) {
      // Replayed whole with nothing unwound after: the entry's frames.
      const bool exact = whole && n_steps == replayed;
      MemoOutcome outcome = exact          ? MemoOutcome::kHit
                            : replayed > 0 ? MemoOutcome::kPartial
                                           : MemoOutcome::kMiss;
      // A new entry, unless all of an entry's steps held and the walk kept
      // no more than it has: pcs filled up during the replay (its steps were
      // not copied), or the walk went on past an entry of kMemoSteps steps
      // (a new one would hold the same steps).
      const int keep = n_steps < kMemoSteps ? n_steps : kMemoSteps;
      if (!exact && !(held_entry && keep <= int(held_entry->n)))
        memo->last = MemoStore(memo, first_cfa, first_ra, first_rbp, steps, keep,
                               ends_at_rule && n_steps <= kMemoSteps);
      MemoCount(memo, outcome, replayed, n_steps - replayed);
      if (exact && whole_out) *whole_out = whole_entry;
    }
  }
#else
  // Frame-pointer walk: [fp] = caller's fp, [fp + 8] = return address.
  (void)from;  // CallerFrame and the memo are x86-64 only
  (void)memo;
  (void)whole_out;
  uintptr_t fp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t lo = fp, hi = b.hi;
  while (hi > 1 && fp >= lo && fp + 16 <= hi && (fp & 7) == 0) {
    uintptr_t next = reinterpret_cast<const uintptr_t*>(fp)[0];
    uintptr_t ra = reinterpret_cast<const uintptr_t*>(fp)[1];
    if (ra < 4096) break;
    if (!keep(ra)) break;
    if (next <= fp) break;
    fp = next;
  }
#endif
  return n;
}

}  // namespace

// Each entry point acquires the memo before the walk, whose register
// snapshot is then taken in the entry point's own frame.
[[gnu::noinline, gnu::no_sanitize_address]] int UnwindNative(uint64_t* pcs, int max_frames,
                                                             int skip) {
  WalkMemo* memo = MemoAcquire();
  int n = Walk(pcs, max_frames, skip, nullptr, 0, nullptr, memo, nullptr, nullptr, nullptr);
  MemoRelease(memo);
  return n;
}

[[gnu::noinline, gnu::no_sanitize_address]] int UnwindNativeFrom(const CallerFrame& from,
                                                                 uint64_t* pcs, int max_frames) {
  WalkMemo* memo = MemoAcquire();
  int n = Walk(pcs, max_frames, 0, nullptr, 0, &from, memo, nullptr, nullptr, nullptr);
  MemoRelease(memo);
  return n;
}

[[gnu::noinline, gnu::no_sanitize_address]] int UnwindNativeTrimmed(uint64_t* pcs, int max_frames,
                                                                    int skip, const CodeRange* trim,
                                                                    int n_trim,
                                                                    const CallerFrame* from) {
  WalkMemo* memo = MemoAcquire();
  int n = Walk(pcs, max_frames, skip, trim, n_trim, from, memo, nullptr, nullptr, nullptr);
  MemoRelease(memo);
  return n;
}

TS_HOT [[gnu::noinline, gnu::no_sanitize_address]] int UnwindNativeTrimmedMemo(
    WalkMemo* memo, MemoEntry** whole, uint64_t* pcs, int max_frames, int skip,
    const CodeRange* trim, int n_trim, const CallerFrame* from, const CodeRange* stop,
    ColdStop* cold) {
  *whole = nullptr;
  return Walk(pcs, max_frames, skip, trim, n_trim, from, memo, whole, stop, cold);
}

#if defined(__x86_64__)
int ContinueWalkOnCopy(const ColdStop& cold, const uint64_t* words, size_t n_words,
                       uint64_t stack_end, uint64_t* pcs, int max_frames, const CodeRange* stop,
                       CopyWalkUse* use) {
  *use = CopyWalkUse{};
  const uintptr_t base = cold.rsp, bytes = n_words * 8;
  // The word at addr, from the copy; false past either end (past its top but inside the
  // thread's stack: past_copy).
  auto read = [&](uintptr_t addr, uintptr_t* v) {
    if (addr < base || addr - base > bytes - 8 || bytes < 8) {
      if (addr >= base && addr < stack_end && stack_end - addr >= 8) use->past_copy = true;
      return false;
    }
    if (addr - base + 8 > use->bytes_read) use->bytes_read = addr - base + 8;
    __builtin_memcpy(v, reinterpret_cast<const char*>(words) + (addr - base), sizeof(*v));
    return true;
  };
  uintptr_t rsp = cold.rsp, rbp = cold.rbp;
  uint64_t key = cold.key;
  int n = 0;
  while (n < max_frames && key != 0) {
    const UnwindRule r = UnwindRule::Unpack(LookupRule(key, /*timed=*/false));
    uintptr_t cfa, ra;
    if (r.kind == RuleKind::kCfa) {
      cfa = (r.cfa_is_rbp ? rbp : rsp) + uintptr_t(intptr_t(r.cfa_offset));
      if (cfa <= rsp || !read(cfa - 8, &ra)) break;
      if (r.rbp_saved && !read(cfa + uintptr_t(intptr_t(r.rbp_offset)), &rbp)) break;
    } else if (r.kind == RuleKind::kFramePointer) {
      uintptr_t next_rbp;
      if (rbp < rsp || !read(rbp, &next_rbp) || !read(rbp + 8, &ra)) break;
      cfa = rbp + 16;
      rbp = next_rbp;
    } else {
      break;  // kEnd: the outermost frame
    }
    if (ra < 4096) break;
    rsp = cfa;
    key = ra;
    pcs[n++] = ra;
    if (stop && InRanges(ra, stop, 1)) break;
  }
  return n;
}
#else
int ContinueWalkOnCopy(const ColdStop&, const uint64_t*, size_t, uint64_t, uint64_t*, int,
                       const CodeRange*, CopyWalkUse* use) {
  *use = CopyWalkUse{};
  return 0;
}
#endif

uint64_t GrowCheckedStack(uint64_t want) {
  StackBounds* b = &t_bounds;
  if (b->top == 0 || want <= b->hi) return b->hi;
  if (want >= b->top) {
    GrowStackBoundsUp(b);
    return b->hi;
  }
  // Part of the rest: checked as GrowStackBoundsUp checks it, the rest left for later.
  FirstTimeWork first_time(FirstTimeKind::kBounds);
  want = (want + 4095) & ~uint64_t{4095};
  if (want < b->top && Readable(b->hi, want)) b->hi = want;
  return b->hi;
}

uint64_t StackEnd() { return t_bounds.top != 0 ? t_bounds.top : t_bounds.hi; }

// Other frames' slots (not instrumented: see Walk).
[[gnu::no_sanitize_address]] void CopyStackBytes(uint8_t* to, uint64_t from, size_t n) {
#if defined(__x86_64__)
  // rep movsb: what glibc's memcpy uses for copies of this size, here without the sanitizers'
  // interceptor (a loop could be turned into a memcpy call).
  const void* src = reinterpret_cast<const void*>(from);
  asm volatile("rep movsb" : "+D"(to), "+S"(src), "+c"(n) : : "memory");
#else
  for (size_t i = 0; i < n; ++i) to[i] = reinterpret_cast<const volatile uint8_t*>(from)[i];
#endif
}

#if !defined(__x86_64__)
void PrepareRuleCache() {}  // (no rule cache: frame pointers only)
#endif

UnwindStats GetUnwindStats() {
  UnwindStats s;
  s.rules_computed = g_rules_computed.load(std::memory_order_relaxed);
  s.fp_fallbacks = g_fp_fallbacks.load(std::memory_order_relaxed);
  s.cache_full = g_cache_full.load(std::memory_order_relaxed);
  s.bounds_from_maps = g_bounds_from_maps.load(std::memory_order_relaxed);
  const FdeIndexCounts fde = GetFdeIndexCounts();
  s.fde_indexes = fde.built;
  s.fde_index_bytes = fde.bytes;
  s.rules_narrowed = fde.narrowed;
  MemoTotals m = GetMemoTotals();
  s.memo_hits = m.hits;
  s.memo_partial = m.partial;
  s.memo_misses = m.misses;
  s.memo_frames_replayed = m.frames_read;
  s.memo_frames_walked = m.frames_walked;
  return s;
}

}  // namespace tracesmith::stacks
