// Native stack unwinding for the calling thread, fast enough to run on every
// CUDA launch.
//
// On x86-64 the unwinder reads the DWARF call-frame information (.eh_frame,
// found through .eh_frame_hdr) of the module that holds each return address
// and reduces it to a tiny rule: "CFA = rsp|rbp + N, return address at
// CFA-8, caller's rbp at CFA+M". Rules are cached per return address in a
// process-wide lock-free hash, so a call site costs a few nanoseconds after
// the first time it is seen. Code without CFI (JIT code, stripped asm) falls
// back to the frame-pointer chain. Every stack read is checked against the
// thread's stack bounds and the walk stops at anything odd, so it never
// faults. Other architectures walk frame pointers only.
//
// Hot path: no allocation, no lock, no syscall. The first unwind on a thread
// finds its stack bounds where glibc put the stack, checked readable with
// process_vm_readv (async-signal-safe; /proc/self/maps otherwise); the first
// sighting of a return address parses CFI (lock-free with glibc 2.35+), whose
// pages the writer thread faults in ahead (StackCollector::PrepareModules).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracesmith::stacks {

// Writes return addresses of the calling thread's stack into `pcs`, innermost
// first, and returns how many. pcs[0] lies in the function that called
// UnwindNative (as with glibc backtrace()); `skip` drops that many more
// innermost frames first. Every entry is a return address: symbolize pc-1.
int UnwindNative(uint64_t* pcs, int max_frames, int skip = 0);

// Where a walk can begin instead of at the unwinder itself: a function's
// caller as it was when the function was entered. A callback that the CUDA
// driver calls takes it on entry, so the walk starts in the driver and does
// not go through the profiler's own frames (each one a rule lookup and a
// stack read on every launch). All zero: not available; walk from the
// unwinder as usual.
struct CallerFrame {
  uint64_t cfa = 0;  // the caller's rsp after the call returns
  uint64_t rbp = 0;  // the caller's rbp at the call
  uint64_t ra = 0;   // the return address: the first frame of the walk
};

// Sets `out` (a CallerFrame) to the enclosing function's caller. A macro,
// because __builtin_frame_address(0) must be evaluated in that function; it
// gives the function a frame pointer, whose saved slots hold the caller's rbp
// and the return address. Checked against __builtin_return_address(0): on a
// mismatch (or off x86-64) `out` stays all zero.
#if defined(__x86_64__)
#define TRACESMITH_CALLER_FRAME(out)                                                     \
  do {                                                                                   \
    const uint64_t* ts_fp_ = static_cast<const uint64_t*>(__builtin_frame_address(0));   \
    (out) = ::tracesmith::stacks::CallerFrame{};                                         \
    if (ts_fp_[1] == reinterpret_cast<uint64_t>(__builtin_return_address(0)))            \
      (out) = ::tracesmith::stacks::CallerFrame{reinterpret_cast<uint64_t>(ts_fp_) + 16, \
                                                ts_fp_[0], ts_fp_[1]};                   \
  } while (0)
#else
#define TRACESMITH_CALLER_FRAME(out) ((out) = ::tracesmith::stacks::CallerFrame{})
#endif

// UnwindNative from `from` (when its ra is set): pcs[0] = from.ra. A `from`
// outside the thread's stack above the unwinder's own rsp is not used: the
// walk starts at the unwinder, as UnwindNative's does.
int UnwindNativeFrom(const CallerFrame& from, uint64_t* pcs, int max_frames);

// Counters since process start (relaxed; for tests and `tracesmith info`).
struct UnwindStats {
  uint64_t rules_computed = 0;  // slow path: CFI parsed for a new return address
  uint64_t fp_fallbacks = 0;    // return addresses without usable CFI
  uint64_t cache_full = 0;      // rules that did not fit in the cache
  // Threads whose stack bounds were read from /proc/self/maps (their stack
  // not laid out as glibc does, or process_vm_readv refused).
  uint64_t bounds_from_maps = 0;
  // Modules whose FDE search table the writer indexed by page (src/stacks/fde_index.h), the
  // indexes' bytes, and rules whose search used one.
  uint64_t fde_indexes = 0, fde_index_bytes = 0, rules_narrowed = 0;
  // The per-thread walk memo (src/stacks/walk_memo.h), per walk:
  // every step replayed from an earlier walk, some, or none. Other threads'
  // last few walks may not be counted yet.
  uint64_t memo_hits = 0, memo_partial = 0, memo_misses = 0;
  uint64_t memo_frames_replayed = 0;  // steps taken from the memo (no rule lookup)
  uint64_t memo_frames_walked = 0;    // steps unwound with rules after the first frame
};
UnwindStats GetUnwindStats();

// Copies `n` bytes of the calling thread's stack at `from`: other frames' slots, read without
// the sanitizers' instrumentation or interceptors (a deferred walk's copy; the capture's copy
// probe).
void CopyStackBytes(uint8_t* to, uint64_t from, size_t n);

// A thread's first walk takes a per-thread memo of walks (670 KiB); this
// maps and populates two ahead, off the launching threads (the capture's
// writer thread calls it every poll; cheap when both are still there). A
// thread that finds none maps its own, faulted in page by page as used.
void PrepareWalkMemos();
struct WalkMemoCounts {
  uint64_t taken_ready = 0;  // threads whose memo was prepared ahead
  uint64_t mapped_here = 0;  // threads that mapped their own
};
WalkMemoCounts GetWalkMemoCounts();

// Walks use the per-thread memo of earlier walks (default), or not: for
// tests and `tracesmith benchmark stacks`, which compare the two.
void SetWalkMemoEnabled(bool enabled);

}  // namespace tracesmith::stacks
