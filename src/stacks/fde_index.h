// FdeIndex: a page index into a module's .eh_frame_hdr search table, so that
// the rule for a new return address finds its FDE in one or two cache misses
// instead of a binary search over the whole table (issue #41 item 2).
//
// The table of a large library (libtorch_cuda, cuDNN) has up to hundreds of
// thousands of entries, so a binary search is a chain of dependent loads,
// cold on a first stack; on an H200's VM a rule cost 2.4 us on average (579 rules,
// 1.4 ms, in a 40-step Transformer capture, 2026-11-30) and up to ~77 us of
// rules landed in one launch callback. The writer builds the index of each
// module it prepares (prepare_modules.cc), from the copy of the table it
// already reads: for every 4-KiB page of code (coarser if a table spanned over
// 4 GiB, which its int32 entries cannot), the last entry starting at
// or before it. The launching thread looks
// the index up lock-free by the header's address and searches only the
// entries of its page.
//
// An index may be stale (its module unloaded and another loaded at the same
// address): the caller checks the narrowed bounds against the table itself
// (the entry at `lo` starts at or before the pc, the one at `hi` after it), so
// a stale or wrong index costs a full search, never a wrong rule.
#pragma once

#include <cstdint>

namespace tracesmith::stacks {

// Writer: indexes the table of the .eh_frame_hdr loaded at `eh_frame_hdr`:
// `count` (initial location, FDE) pairs of datarel int32, copied at `table`.
// A table indexed already (the same header, count and span) is kept, not indexed again; false
// when the table is not sorted, too small to need it, or too large.
bool BuildFdeIndex(uintptr_t eh_frame_hdr, const int32_t* table, uint64_t count);

// Any thread, lock-free, async-signal-safe: the entries [*lo, *hi) of the
// table (of `count` entries) at `eh_frame_hdr` that can hold `rel_pc` (a pc
// less the header's address). False: no index for that header.
bool NarrowFdeSearch(uintptr_t eh_frame_hdr, int64_t rel_pc, uint64_t count, uint64_t* lo,
                     uint64_t* hi);

// Searches narrowed (rules whose FDE search used an index) and indexes built.
struct FdeIndexCounts {
  uint64_t narrowed = 0, built = 0, bytes = 0;
};
FdeIndexCounts GetFdeIndexCounts();
void CountNarrowedSearch();

}  // namespace tracesmith::stacks
