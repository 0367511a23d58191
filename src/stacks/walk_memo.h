// WalkMemo: the calling thread's recent native walks, so that a walk which
// retraces one of them reads the stack instead of unwinding it.
//
// A walk is deterministic: from a state (rsp, rbp, return address) each step
// applies the cached rule of the return address, which reads one or two stack
// words (the next return address, maybe the caller's saved rbp). A memo entry
// keeps a walk's first state and, for every step, the frame reached and what
// was read to reach it. A new walk from the same first state (same rsp and
// address: the same call site at the same depth) re-reads those words: while
// the return addresses hold the recorded values, the new walk's steps are
// the recorded ones (same inputs, same rules), with no rule lookup. rbp takes
// part only where a step uses the incoming rbp (a frame-pointer or rbp-based
// CFA rule): without frame pointers rbp is an ordinary register whose saved
// value differs from call to call, so a saved rbp is compared only where a
// later step uses it. Where a word differs (another caller at that depth),
// the walk unwinds until it reaches a frame of the recorded walk again (the
// common caller, at the same address) and replays from there.
//
// Per thread: 64 sets x 4 ways of up to kMemoSteps steps (670 KiB, taken on
// the thread's first walk from those PrepareWalkMemos mapped and populated
// ahead, else mapped then and faulted in as used; unmapped at thread exit). A walk in a signal
// handler that interrupted a walk on the same thread does not use the memo. x86-64 only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack_hash.h"                  // CodeRange
#include "tracesmith/stacks/unwinder.h"  // SetWalkMemoEnabled, CallerFrame

namespace tracesmith::stacks {

// One step: the frame reached and what was read to reach it.
struct MemoStep {
  uint64_t cfa;                            // the frame's CFA (its rsp once the call returns)
  uint64_t ra;                             // its return address, read at cfa - 8
  uint64_t rbp;                            // rbp in that frame, as recorded
  uint32_t flags;                          // kReadRbp | kUsesRbp
  int32_t rbp_from;                        // kReadRbp: rbp was read at cfa + rbp_from
  static constexpr uint32_t kReadRbp = 1;  // rbp read from the stack
  static constexpr uint32_t kUsesRbp = 2;  // the step's CFA came from the incoming rbp
};
static_assert(sizeof(MemoStep) == 32);

inline constexpr int kMemoSteps = 80;  // entry = 40 + 80 x 32 = 2600 bytes
inline constexpr int kMemoSets = 64;
inline constexpr int kMemoWays = 4;
inline constexpr int kMemoIdBits = 9;

// A stack id a collector (owner: its serial) made of the frames of a memo
// entry (entry: the entry's store serial) and the Python frames that hashed
// to (py1, py2).
struct MemoId {
  uint64_t owner = 0, py1 = 0, py2 = 0;
  uint32_t entry = 0, id = 0;
};
static_assert(sizeof(MemoId) == 32);

struct MemoEntry {
  uint64_t cfa = 0, ra = 0, rbp = 0;  // the first frame's state (ra 0: empty)
  uint32_t stamp = 0;                 // last use, for replacement
  uint16_t n = 0;                     // steps recorded after the first frame
  bool ends_at_rule = false;          // the walk ended after them at a kEnd rule
  uint32_t serial = 0;                // which store this is (MemoId::entry)
  MemoStep steps[kMemoSteps];
};
static_assert(sizeof(MemoEntry) == 40 + kMemoSteps * sizeof(MemoStep));

// The first states of a set's ways, in one cache line: a lookup reads this
// line rather than one line (and page) per way.
struct MemoTags {
  uint64_t cfa[kMemoWays];
  uint64_t ra[kMemoWays];
};
static_assert(sizeof(MemoTags) == 64);

struct WalkMemo {
  alignas(64) MemoTags tags[kMemoSets];
  // Stack ids by (entry, Python frames): a walk that replays an entry whole,
  // with nothing unwound after it, has that entry's native frames, so the
  // same Python frames give the same id without merging, hashing and
  // looking up the whole stack (stack_collector.cc). An entry replaced gets
  // a new serial, so ids made of its old frames no longer match. Used only
  // while the memo is acquired (signal handlers' walks on the thread do not
  // touch it then).
  MemoId ids[1 << kMemoIdBits];
  MemoEntry entries[kMemoSets * kMemoWays];
  const MemoEntry* last = nullptr;  // the thread's previous walk
  uint32_t clock = 0;
  uint32_t stores = 0;  // serials of stored entries
  bool busy = false;
  // Not yet added to the process-wide counters (flushed every 64 walks).
  uint32_t pending_hits = 0, pending_partial = 0, pending_misses = 0;
  uint64_t pending_frames_read = 0, pending_frames_walked = 0;
};

// The calling thread's memo, marked busy; nullptr when it is already busy
// (a walk interrupted by a signal handler's), cannot be mapped, or the
// thread is exiting. Pair with MemoRelease.
WalkMemo* MemoAcquire();
void MemoRelease(WalkMemo* memo);

// The id slot for an entry's frames with Python frames hashed to py1.
inline MemoId& MemoIdSlot(WalkMemo* memo, const MemoEntry* entry, uint64_t py1) {
  uint64_t h = (py1 ^ (uint64_t(entry->serial) * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
  return memo->ids[h >> (64 - kMemoIdBits)];
}

// UnwindNativeTrimmed (stack_hash.h) with the calling thread's memo already
// acquired by the caller (nullptr: walk without it). *whole is set to the
// entry whose steps the walk replayed whole, nothing unwound after them (the
// frames returned are exactly those the entry gives), else to nullptr; the
// caller may look up its ids (MemoIdSlot) until it releases the memo.
// With `stop`, the walk ends after the first frame whose return address is
// in that range (kept): mixed stacks stop at the innermost interpreter frame.
// With `cold`, a return address without a rule yet (first sighting) ends the walk instead of
// computing its rule there, once per address: the address is marked pending in the rule cache
// and *cold describes the walk's state at it (cold->stopped); the stack from there up is then
// copied and the walk finished elsewhere (ContinueWalkOnCopy, on the writer). Only after every
// skip and trim (the frames kept so far are the stack's innermost). A later walk that meets a
// pending address computes its rule as without `cold`.
struct ColdStop {
  bool stopped = false;
  uint64_t rsp = 0, rbp = 0, key = 0;  // the walk's state: key is the next return address
};
int UnwindNativeTrimmedMemo(WalkMemo* memo, MemoEntry** whole, uint64_t* pcs, int max_frames,
                            int skip, const CodeRange* trim, int n_trim, const CallerFrame* from,
                            const CodeRange* stop = nullptr, ColdStop* cold = nullptr);

// The calling thread's stack checked readable up to `want` at least (page by page, as a walk
// that reads there does; UINT64_MAX: up to glibc's top, once), as far as it is; the end of the
// part known readable. For a walk's copy (ColdStop). StackEnd: where the thread's stack ends
// (glibc's top when it is known, checked or not), the most a walk on the thread could read.
uint64_t GrowCheckedStack(uint64_t want);
uint64_t StackEnd();

// Finishes a walk that stopped at `cold` over `words`, a copy of the stack from cold.rsp up
// (`n_words` words), computing the rules it needs (not timed as first-time work: this runs on
// the writer). Appends at most `max_frames` return addresses to `pcs`, ending as the walk on the
// thread would (a rule without a caller, `stop`, a return address in the zero page, a read
// outside the thread's stack, which ends at `stack_end`) or where it would read past the copy
// inside the thread's stack (use->past_copy: the walk on the thread would have gone on). The
// number appended; use->bytes_read: how much of the copy the walk read. x86-64; elsewhere 0.
struct CopyWalkUse {
  bool past_copy = false;
  uint64_t bytes_read = 0;
};
int ContinueWalkOnCopy(const ColdStop& cold, const uint64_t* words, size_t n_words,
                       uint64_t stack_end, uint64_t* pcs, int max_frames, const CodeRange* stop,
                       CopyWalkUse* use);

// Outcome of a walk for the counters.
enum class MemoOutcome : uint8_t { kHit, kPartial, kMiss };
void MemoCount(WalkMemo* memo, MemoOutcome outcome, int frames_read, int frames_walked);

// Set index of a first frame.
inline int MemoSet(uint64_t cfa, uint64_t ra) {
  uint64_t h = (cfa ^ (ra * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
  return int(h >> 58) & (kMemoSets - 1);
}

// Stores a walk: its first frame and `n` steps (and whether it then ended at
// a kEnd rule). Replaces the least recently used way of the set; returns
// the entry.
const MemoEntry* MemoStore(WalkMemo* memo, uint64_t cfa, uint64_t ra, uint64_t rbp,
                           const MemoStep* steps, int n, bool ends_at_rule);

// Process-wide counters (for UnwindStats): the calling thread's pending
// counts are included.
struct MemoTotals {
  uint64_t hits = 0, partial = 0, misses = 0, frames_read = 0, frames_walked = 0;
};
MemoTotals GetMemoTotals();

}  // namespace tracesmith::stacks
