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
// queries its stack bounds (pthread_getattr_np); the first sighting of a
// return address parses CFI (and may take the loader's lock).
#pragma once

#include <cstdint>

namespace tracesmith::capture::stacks {

// Writes return addresses of the calling thread's stack into `pcs`, innermost
// first, and returns how many. pcs[0] lies in the function that called
// UnwindNative (as with glibc backtrace()); `skip` drops that many more
// innermost frames first. Every entry is a return address: symbolize pc-1.
int UnwindNative(uint64_t* pcs, int max_frames, int skip = 0);

// Counters since process start (relaxed; for tests and `tracesmith info`).
struct UnwindStats {
  uint64_t rules_computed = 0;  // slow path: CFI parsed for a new return address
  uint64_t fp_fallbacks = 0;    // return addresses without usable CFI
  uint64_t cache_full = 0;      // rules that did not fit in the cache
};
UnwindStats GetUnwindStats();

}  // namespace tracesmith::capture::stacks
