// The unwinder against glibc backtrace() on the same known call chains.
#include "tracesmith/stacks/unwinder.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chains.h"

namespace tracesmith::stacks {
namespace {

using testing::ChainThroughLibrary;
using testing::RecurseChain;

struct Captured {
  std::vector<uint64_t> ours = std::vector<uint64_t>(256);
  std::vector<void*> glibc = std::vector<void*>(256);
  int n_ours = 0, n_glibc = 0;
};

// Both unwinders run from the same leaf function, so every frame but the
// first (the leaf's own, at two different call sites) must agree. Under
// ASan, backtrace() is intercepted and reports one more inner frame, so
// the lists are aligned on our second frame.
void ExpectSameAsBacktrace(const Captured& c) {
  ASSERT_GT(c.n_glibc, 2);
  ASSERT_GT(c.n_ours, 2);
  int j = 1;
  while (j < c.n_glibc && reinterpret_cast<uint64_t>(c.glibc[j]) != c.ours[1]) ++j;
  ASSERT_LT(j, c.n_glibc) << "our caller frame is not in backtrace()'s list";
  EXPECT_LE(j, 2);
  EXPECT_EQ(c.n_ours - 1, c.n_glibc - j);
  for (int i = 1; i < c.n_ours && i - 1 + j < c.n_glibc; ++i) {
    EXPECT_EQ(c.ours[i], reinterpret_cast<uint64_t>(c.glibc[i - 1 + j])) << "frame " << i;
  }
}

std::string SymbolOf(uint64_t pc) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(pc - 1), &info) && info.dli_sname) return info.dli_sname;
  return "";
}

std::string ModuleOf(uint64_t pc) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(pc - 1), &info) && info.dli_fname) return info.dli_fname;
  return "";
}

TEST(UnwinderTest, MatchesBacktraceOnRecursiveChain) {
  for (int depth : {0, 1, 5, 16, 48}) {
    Captured c;
    RecurseChain(depth, [&] {
      c.n_glibc = backtrace(c.glibc.data(), 256);
      c.n_ours = UnwindNative(c.ours.data(), 256);
      return 0;
    });
    SCOPED_TRACE("depth " + std::to_string(depth));
    ExpectSameAsBacktrace(c);
    // The chain itself: depth + 1 RecurseChain frames, contiguous.
    int chain = 0;
    for (int i = 0; i < c.n_ours; ++i)
      if (SymbolOf(c.ours[i]).find("RecurseChain") != std::string::npos) ++chain;
    EXPECT_EQ(chain, depth + 1);
  }
}

TEST(UnwinderTest, MatchesBacktraceThroughSharedLibrary) {
  Captured c;
  ChainThroughLibrary(7, [&] {
    c.n_glibc = backtrace(c.glibc.data(), 256);
    c.n_ours = UnwindNative(c.ours.data(), 256);
    return 0;
  });
  ExpectSameAsBacktrace(c);
  int in_lib = 0;
  for (int i = 0; i < c.n_ours; ++i) {
    if (SymbolOf(c.ours[i]) == "TsLibRecurse") {
      ++in_lib;
      EXPECT_NE(ModuleOf(c.ours[i]).find("libts_stacks_testlib"), std::string::npos);
    }
  }
  // 8 levels; the innermost calls back through a function pointer.
  EXPECT_EQ(in_lib, 8);
}

TEST(UnwinderTest, SkipAndMaxFrames) {
  Captured c;
  std::vector<uint64_t> skipped(256), few(4);
  int n_skipped = 0, n_few = 0;
  RecurseChain(10, [&] {
    c.n_ours = UnwindNative(c.ours.data(), 256);
    n_skipped = UnwindNative(skipped.data(), 256, 3);
    n_few = UnwindNative(few.data(), 4);
    return 0;
  });
  ASSERT_GT(c.n_ours, 12);
  EXPECT_EQ(n_skipped, c.n_ours - 3);
  for (int i = 1; i < n_skipped; ++i) EXPECT_EQ(skipped[i], c.ours[i + 3]);
  EXPECT_EQ(n_few, 4);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(few[i], c.ours[i]);
  EXPECT_EQ(UnwindNative(few.data(), 0), 0);
}

// A callback as the CUDA driver calls it: takes its caller's frame on entry,
// then walks from there and, for comparison, from itself.
[[gnu::noinline]] int WalkFromCallerFrame(std::vector<uint64_t>* from_walk,
                                          std::vector<uint64_t>* own_walk, CallerFrame* out) {
  CallerFrame from;
  TRACESMITH_CALLER_FRAME(from);
  *out = from;
  own_walk->resize(256);
  own_walk->resize(size_t(UnwindNative(own_walk->data(), 256)));
  from_walk->resize(256);
  from_walk->resize(size_t(UnwindNativeFrom(from, from_walk->data(), 256)));
  return 0;
}

TEST(UnwinderTest, WalkFromCallerFrameSkipsTheCallersOwnFrame) {
#if defined(__x86_64__)
  for (int lib_depth : {0, 6}) {
    std::vector<uint64_t> from_walk, own_walk;
    CallerFrame from;
    ChainThroughLibrary(lib_depth,
                        [&] { return WalkFromCallerFrame(&from_walk, &own_walk, &from); });
    SCOPED_TRACE("lib_depth " + std::to_string(lib_depth));
    ASSERT_NE(from.ra, 0u);
    ASSERT_GT(own_walk.size(), size_t(lib_depth + 4));
    // own_walk[0] lies in WalkFromCallerFrame; from_walk starts at its caller.
    ASSERT_EQ(from_walk.size(), own_walk.size() - 1);
    EXPECT_EQ(from_walk[0], from.ra);
    for (size_t i = 0; i < from_walk.size(); ++i) EXPECT_EQ(from_walk[i], own_walk[i + 1]) << i;
  }
#else
  GTEST_SKIP() << "CallerFrame is x86-64 only";
#endif
}

TEST(UnwinderTest, WalkFromImplausibleCallerFrameFallsBackToTheUnwinder) {
  std::vector<uint64_t> pcs(16), own(16);
  CallerFrame none;  // all zero: a walk from the unwinder itself, as UnwindNative
  EXPECT_EQ(UnwindNativeFrom(none, pcs.data(), 16), UnwindNative(own.data(), 16));
  int local = 0;
  // A frame below the unwinder's own stack pointer, or outside the stack: not
  // used; the walk is the unwinder's own (the stack is not lost).
  CallerFrame below{reinterpret_cast<uint64_t>(&local) - 4096, 0, 0x401000};
  EXPECT_EQ(UnwindNativeFrom(below, pcs.data(), 16), UnwindNative(own.data(), 16));
  EXPECT_NE(pcs[0], 0x401000u);
  CallerFrame heap{reinterpret_cast<uint64_t>(pcs.data()) + 64, 0, 0x401000};
  EXPECT_EQ(UnwindNativeFrom(heap, pcs.data(), 16), UnwindNative(own.data(), 16));
  EXPECT_NE(pcs[0], 0x401000u);
}

// One call site (the compiler may not duplicate it: noinline).
[[gnu::noinline]] void UnwindHundredTimes() {
  uint64_t pcs[64];
  for (int i = 0; i < 100; ++i) UnwindNative(pcs, 64);
}

TEST(UnwinderTest, RepeatedCallSitesHitTheCache) {
  RecurseChain(20, [] {
    // One call site for both rounds: a volatile counter keeps the compiler
    // from unrolling the loop into two call sites.
    UnwindStats before;
    for (volatile int round = 0; round < 2;) {
      if (round == 1) before = GetUnwindStats();
      UnwindHundredTimes();
      round = round + 1;
    }
    EXPECT_EQ(GetUnwindStats().rules_computed, before.rules_computed);
    return 0;
  });
}

}  // namespace
}  // namespace tracesmith::stacks
