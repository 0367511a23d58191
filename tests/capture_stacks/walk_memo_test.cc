// The per-thread walk memo (src/stacks/walk_memo.h): a walk that
// starts where an earlier one did replays that walk's steps only while the
// stack still holds what they read; every result equals a walk without it.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <algorithm>
#include <vector>

#include "chains.h"
#include "stacks/walk_memo.h"
#include "tracesmith/stacks/stack_collector.h"
#include "tracesmith/stacks/unwinder.h"

namespace tracesmith::stacks {
namespace {

using testing::ChainThroughLibrary;
using testing::RecurseChain;

struct Walks {
  std::vector<uint64_t> with_memo = std::vector<uint64_t>(256);
  std::vector<uint64_t> without = std::vector<uint64_t>(256);
  int n_with = 0, n_without = 0;
};

// The innermost frames, shared by every path below: the walks start in
// Leaf, at the same stack address and return address whoever called Mid.
[[gnu::noinline]] int Leaf(Walks* w) {
  SetWalkMemoEnabled(false);
  w->n_without = UnwindNative(w->without.data(), 256);
  SetWalkMemoEnabled(true);
  w->n_with = UnwindNative(w->with_memo.data(), 256);
  asm volatile("" ::: "memory");
  return w->n_with;
}
[[gnu::noinline]] int Mid(Walks* w) { return Leaf(w) + 1; }
// Two callers of Mid with the same frame size: Mid's frame is at the same
// address under either, so only the return address into them differs.
[[gnu::noinline]] int CallerA(Walks* w) { return Mid(w) * 3; }
[[gnu::noinline]] int CallerB(Walks* w) { return Mid(w) * 5; }
[[gnu::noinline]] int CallerC(Walks* w) { return Mid(w) * 7; }

// One call site for every caller, so the stack below them is the same too.
[[gnu::noinline]] void Dispatch(int (*caller)(Walks*), Walks* w) {
  caller(w);
  asm volatile("" ::: "memory");
}

void ExpectSameWalks(const Walks& w, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_GT(w.n_without, 4);
  // Frame 0 differs (two call sites in Leaf); the rest must be identical.
  ASSERT_EQ(w.n_with, w.n_without);
  for (int i = 1; i < w.n_with; ++i) EXPECT_EQ(w.with_memo[i], w.without[i]) << "frame " << i;
}

TEST(WalkMemoTest, ReplaysOnlyWhatTheStackStillHolds) {
#if defined(__x86_64__)
  RecurseChain(12, [] {
    int (*callers[])(Walks*) = {CallerA, CallerB, CallerA, CallerA, CallerB, CallerC, CallerB};
    const char* names[] = {"A", "B", "A", "A", "B", "C", "B"};
    std::vector<std::vector<uint64_t>> walks;
    UnwindStats before = GetUnwindStats();
    for (int i = 0; i < 7; ++i) {
      Walks w;
      UnwindStats at = GetUnwindStats();
      Dispatch(callers[i], &w);
      ExpectSameWalks(w, names[i]);
      if (i == 1) {
        // The first B: Leaf's step to Mid is replayed from A's walk; the
        // step to CallerB and the step to Dispatch (CallerB's caller, at
        // the address it had under CallerA) are unwound; from Dispatch on,
        // A's walk is rejoined and replayed to the end.
        UnwindStats now = GetUnwindStats();
        EXPECT_EQ(now.memo_frames_walked - at.memo_frames_walked, 2u);
        EXPECT_EQ(now.memo_frames_replayed - at.memo_frames_replayed, uint64_t(w.n_with - 2));
      }
      walks.emplace_back(w.with_memo.begin() + 1, w.with_memo.begin() + w.n_with);
    }
    UnwindStats after = GetUnwindStats();
    // The return address into the caller tells A, B and C apart.
    EXPECT_NE(walks[0], walks[1]);
    EXPECT_NE(walks[0], walks[5]);
    EXPECT_NE(walks[1], walks[5]);
    EXPECT_EQ(walks[0], walks[2]);
    EXPECT_EQ(walks[1], walks[6]);
    // 7 walks with the memo: the second A, the third A and the second B
    // repeat an earlier walk whole; the first B and C share Leaf and Mid
    // with A (partial); the first A is new, or partial if an earlier test
    // walked from Leaf at this depth.
    EXPECT_EQ(after.memo_hits - before.memo_hits, 4u);
    EXPECT_EQ(after.memo_hits + after.memo_partial + after.memo_misses -
                  (before.memo_hits + before.memo_partial + before.memo_misses),
              7u);
    EXPECT_GE(after.memo_partial - before.memo_partial, 2u);
    EXPECT_GT(after.memo_frames_replayed, before.memo_frames_replayed);
    return 0;
  });
#else
  GTEST_SKIP() << "the walk memo is x86-64 only";
#endif
}

TEST(WalkMemoTest, DeeperOrShallowerCallersAreNotConfused) {
  // The same Leaf/Mid frames reached from chains of different depths start
  // at different stack addresses; each result must still be exact.
  for (int depth : {3, 9, 3, 20, 9}) {
    RecurseChain(depth, [&] {
      Walks w;
      Dispatch(CallerA, &w);
      ExpectSameWalks(w, "depth");
      return 0;
    });
  }
}

// Frames with frame pointers find their CFA from rbp and read the saved
// rbp (MemoStep::kUsesRbp | kReadRbp). Walks through them, from callers and
// depths that vary, must equal walks without the memo, and repeats must be
// replayed.
TEST(WalkMemoTest, FramePointerFramesReplayExactly) {
#if defined(__x86_64__)
  using testing::RecurseChainFp;
  const UnwindStats before = GetUnwindStats();
  int (*callers[])(Walks*) = {CallerA, CallerB, CallerA, CallerC, CallerA, CallerA};
  for (int depth : {4, 7, 4, 4, 7}) {
    for (int i = 0; i < 6; ++i) {
      RecurseChain(2, [&] {
        return RecurseChainFp(depth, [&] {
          return RecurseChain(1 + (i & 1), [&] {
            Walks w;
            Dispatch(callers[i], &w);
            ExpectSameWalks(w, "fp");
            return 0;
          });
        });
      });
    }
  }
  const UnwindStats after = GetUnwindStats();
  EXPECT_GT(after.memo_hits, before.memo_hits);
#else
  GTEST_SKIP() << "the walk memo is x86-64 only";
#endif
}

TEST(WalkMemoTest, MaxFramesIsHonouredOnAReplay) {
  RecurseChain(30, [] {
    Walks full;
    Dispatch(CallerB, &full);  // now in the memo
    Dispatch(CallerB, &full);
    std::vector<uint64_t> few(5);
    int n = 0;
    // A walk from the same place with room for 5 frames.
    [&]() __attribute__((noinline)) { n = UnwindNative(few.data(), 5); }
    ();
    EXPECT_EQ(n, 5);
    return 0;
  });
}

// Stack ids through the memo: CaptureStack answers a walk that replays a
// memo entry whole from the id it gave that entry before. Ids must be the
// ones computed without the memo, also once entries are replaced: eight
// callers of one leaf share the leaf's first state, so they fill and
// evict the 4 ways of one set.
struct Ids {
  StackCollector* collector;
  bool memo = false;
  uint32_t id = 0;
};
[[gnu::noinline]] int IdLeaf(Ids* ids) {
  SetWalkMemoEnabled(ids->memo);
  ids->id = ids->collector->CaptureStack();
  SetWalkMemoEnabled(true);
  asm volatile("" ::: "memory");
  return int(ids->id);
}
[[gnu::noinline]] int IdMid(Ids* ids) { return IdLeaf(ids) + 1; }
template <int K>
[[gnu::noinline]] int IdCaller(Ids* ids) {
  return IdMid(ids) * (K + 2);
}
[[gnu::noinline]] void IdDispatch(int (*caller)(Ids*), Ids* ids) {
  caller(ids);
  asm volatile("" ::: "memory");
}
// The id without the memo, then with it, from the same frames.
[[gnu::noinline]] std::pair<uint32_t, uint32_t> IdsOf(int (*caller)(Ids*), StackCollector* c) {
  std::pair<uint32_t, uint32_t> out;
  for (bool memo : {false, true}) {
    Ids ids{c, memo};
    IdDispatch(caller, &ids);
    (memo ? out.second : out.first) = ids.id;
  }
  return out;
}

TEST(WalkMemoTest, StackIdsThroughTheMemoAreTheIdsWithoutIt) {
  StackCollectorOptions options;
  options.mode = StackMode::kNative;
  StackCollector collector(options);
  int (*callers[])(Ids*) = {IdCaller<0>, IdCaller<1>, IdCaller<2>, IdCaller<3>,
                            IdCaller<4>, IdCaller<5>, IdCaller<6>, IdCaller<7>};
  RecurseChain(6, [&]() -> int {
    std::vector<uint32_t> first(8);
    // Each caller three times in a row (the second and third replay whole),
    // then all of them again in another order, twice.
    int order[] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7,
                   7, 3, 1, 7, 5, 0, 6, 2, 4, 3, 1, 7, 5, 0, 6, 2, 4, 0, 0, 1, 1, 7, 7};
    for (int k : order) {
      auto [without, with_memo] = IdsOf(callers[k], &collector);
      SCOPED_TRACE(k);
      EXPECT_NE(without, 0u);
      EXPECT_EQ(with_memo, without);
      if (!first[k]) first[k] = without;
      EXPECT_EQ(without, first[k]);
    }
    // Eight different stacks.
    std::sort(first.begin(), first.end());
    EXPECT_EQ(std::unique(first.begin(), first.end()), first.end());
    return 0;
  });
}

// A walk with a stop range (mixed stacks stop at the interpreter's eval
// loop) ends after the first frame in it, whether its steps are unwound or
// replayed from entries recorded with or without the stop.
[[gnu::noinline]] int WalkOnce(bool use_memo, const CodeRange* stop, std::vector<uint64_t>* pcs) {
  WalkMemo* memo = use_memo ? MemoAcquire() : nullptr;
  MemoEntry* whole = nullptr;
  int n = UnwindNativeTrimmedMemo(memo, &whole, pcs->data(), int(pcs->size()), 0, nullptr, 0,
                                  nullptr, stop);
  MemoRelease(memo);
  asm volatile("" ::: "memory");
  return n;
}

struct StopWalk {
  bool memo, stop, exact;  // exact: replayed whole, nothing unwound
};

// Fills the stack below the caller with junk, so that a walk's own
// scratch (its steps for a new memo entry) holds nothing from the last one.
[[gnu::noinline]] void ScrubStack() {
  volatile char junk[16384];
  for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = char(0xa5 ^ i);
}

// The walks, all from one call site; the first, unwound without a stop, is
// the reference.
[[gnu::noinline]] void CheckStopWalks(const CodeRange& stop, const std::vector<StopWalk>& walks) {
  std::vector<uint64_t> full(256);
  int n_full = 0, first_in = -1;
  int step = 0;
  for (auto [memo, with_stop, exact] : walks) {
    SCOPED_TRACE("walk " + std::to_string(step++));
    std::vector<uint64_t> pcs(256);
    ScrubStack();
    const UnwindStats before = GetUnwindStats();
    const int n = WalkOnce(memo, with_stop ? &stop : nullptr, &pcs);
    const UnwindStats after = GetUnwindStats();
    if (exact) {
      EXPECT_EQ(after.memo_frames_walked, before.memo_frames_walked);
      EXPECT_EQ(after.memo_hits, before.memo_hits + 1);
    }
    if (n_full == 0) {
      full = pcs;
      n_full = n;
      for (int i = 0; i < n_full && first_in < 0; ++i)
        if (full[size_t(i)] - 1 - stop.start < stop.end - stop.start) first_in = i;
      ASSERT_GT(first_in, 0);
      ASSERT_LT(first_in + 4, n_full);  // 3 more library frames, then the test's
      continue;
    }
    const int expect = with_stop ? first_in + 1 : n_full;
    EXPECT_EQ(n, expect);
    for (int i = 0; i < n && i < expect; ++i)
      EXPECT_EQ(pcs[size_t(i)], full[size_t(i)]) << "frame " << i;
  }
}

TEST(WalkMemoTest, AStopRangeEndsTheWalkThereOnReplaysToo) {
#if defined(__x86_64__)
  // The stop range: TsLibRecurse (test_lib.cc), from its ELF symbol size.
  Dl_info info;
  void* sym = nullptr;
  void* fn = reinterpret_cast<void*>(&TsLibRecurse);
  ASSERT_NE(dladdr1(fn, &info, &sym, RTLD_DL_SYMENT), 0);
  ASSERT_NE(sym, nullptr);
  const uint64_t start = reinterpret_cast<uint64_t>(fn);
  const CodeRange stop{start, start + static_cast<const ElfW(Sym)*>(sym)->st_size};
  // (memo, stop, exact). The stop's entry first: replayed whole; then
  // replayed whole by a walk without the stop, which goes on and is
  // recorded anew (its first steps copied from the entry), replayed whole.
  RecurseChain(5, [&] {
    return ChainThroughLibrary(3, [&] {
      CheckStopWalks(stop, {{false, false, false},
                            {false, true, false},
                            {true, true, false},
                            {true, true, true},
                            {true, false, false},
                            {true, false, true},
                            {true, true, true},
                            {true, false, true}});
      return 0;
    });
  });
  // From another first state, the entry without the stop first: a walk with
  // the stop replays it as far as the stop and is recorded; of the two
  // entries, which hold equally far, the one that ends there is replayed.
  RecurseChain(6, [&] {
    return ChainThroughLibrary(3, [&] {
      CheckStopWalks(stop, {{false, false, false},
                            {true, false, false},
                            {true, false, true},
                            {true, true, false},
                            {true, true, true},
                            {true, false, true},
                            {true, true, true}});
      return 0;
    });
  });
#else
  GTEST_SKIP() << "the walk memo is x86-64 only";
#endif
}

// Stores of the calling thread's memo so far.
uint32_t MemoStores() {
  WalkMemo* m = MemoAcquire();
  const uint32_t n = m ? m->stores : 0;
  MemoRelease(m);
  return n;
}

// Up to `max_frames` frames, with or without the memo, from one call site.
[[gnu::noinline]] std::vector<uint64_t> WalkUpTo(bool use_memo, int max_frames) {
  std::vector<uint64_t> pcs(static_cast<size_t>(max_frames));
  WalkMemo* memo = use_memo ? MemoAcquire() : nullptr;
  MemoEntry* whole = nullptr;
  const int n =
      UnwindNativeTrimmedMemo(memo, &whole, pcs.data(), max_frames, 0, nullptr, 0, nullptr);
  MemoRelease(memo);
  pcs.resize(size_t(n));
  asm volatile("" ::: "memory");
  return pcs;
}

// A walk in which all of an entry's steps hold adds no entry when it keeps
// no more than the entry: pcs filled up during the replay (the steps were
// not copied: storing them stored scratch), or the walk went on past an
// entry of kMemoSteps steps (every such walk stored the same steps again).
[[gnu::noinline]] void CheckNoNewEntries(int depth) {
  // (memo, max frames), all from one call site: the reference without the
  // memo, the walk recorded, then replays that fill pcs and whole ones.
  const std::pair<bool, int> walks[] = {{false, 256}, {true, 256}, {true, 5}, {true, 256},
                                        {true, 5},    {true, 256}, {true, 5}, {true, 256}};
  std::vector<uint64_t> reference;
  uint32_t stores = 0;
  int step = 0;
  for (auto [memo, max_frames] : walks) {
    SCOPED_TRACE("walk " + std::to_string(step));
    ScrubStack();
    const std::vector<uint64_t> pcs = WalkUpTo(memo, max_frames);
    if (step == 0) {
      reference = pcs;
      ASSERT_GT(int(reference.size()), depth);
    } else {
      EXPECT_EQ(pcs,
                std::vector<uint64_t>(
                    reference.begin(),
                    reference.begin() + std::min<size_t>(reference.size(), size_t(max_frames))));
    }
    if (step == 1) stores = MemoStores();
    ++step;
  }
  EXPECT_EQ(MemoStores(), stores);
}

TEST(WalkMemoTest, ReplaysThatAddNothingStoreNothing) {
#if defined(__x86_64__)
  RecurseChain(20, [] {
    CheckNoNewEntries(20);
    return 0;
  });
  RecurseChain(kMemoSteps + 40, [] {  // deeper than an entry holds
    CheckNoNewEntries(kMemoSteps + 40);
    return 0;
  });
#else
  GTEST_SKIP() << "the walk memo is x86-64 only";
#endif
}

}  // namespace
}  // namespace tracesmith::stacks
