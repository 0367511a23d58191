// The unwinder against glibc backtrace() on the same known call chains.
#include "tracesmith/capture/stacks/unwinder.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chains.h"

namespace tracesmith::capture::stacks {
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

// Reuse of the last walk (unwinder.h): every walk, reused or not, equals
// backtrace()'s, whatever order the depths come in.
TEST(UnwinderTest, ReusedWalksEqualFreshOnes) {
  uint64_t reused = 0;
  for (int depth : {10, 10, 20, 10, 5, 20, 20, 0, 48, 47}) {
    Captured c;
    RecurseChain(depth, [&] {
      UnwindStats before = GetUnwindStats();
      c.n_glibc = backtrace(c.glibc.data(), 256);
      c.n_ours = UnwindNative(c.ours.data(), 256);
      reused += GetUnwindStats().thread_steps_reused - before.thread_steps_reused;
      return 0;
    });
    SCOPED_TRACE("depth " + std::to_string(depth));
    ExpectSameAsBacktrace(c);
  }
#if defined(__x86_64__)
  EXPECT_GT(reused, 0u) << "repeated stacks were walked afresh";
#endif
}

TEST(UnwinderTest, AnIdenticalStackIsReplayedWhole) {
  RecurseChain(30, [] {
    uint64_t a[256], b[256];
    int na = 0, nb = 0;
    UnwindStats mid;
    for (volatile int round = 0; round < 2;) {  // one call site, twice
      if (round == 1) mid = GetUnwindStats();
      (round == 0 ? na : nb) = UnwindNative(round == 0 ? a : b, 256);
      round = round + 1;
    }
    UnwindStats after = GetUnwindStats();
    EXPECT_EQ(na, nb);
    for (int i = 0; i < na && i < nb; ++i) EXPECT_EQ(a[i], b[i]) << "frame " << i;
#if defined(__x86_64__)
    EXPECT_EQ(after.thread_steps_walked, mid.thread_steps_walked) << "the second walk looked up rules";
    EXPECT_GE(after.thread_steps_reused - mid.thread_steps_reused, uint64_t(nb));
#endif
    return 0;
  });
}

// Launches from several places in turn (a training step): each place's walk
// comes back from the thread's table of walks, whole.
TEST(UnwinderTest, RepeatedCallSitesAreReplayedFromTheTable) {
  uint64_t walked_second_round = 0;
  for (int round = 0; round < 2; ++round) {
    for (int depth : {5, 12, 30, 7}) {
      Captured c;
      UnwindStats before;
      RecurseChain(depth, [&] {
        c.n_glibc = backtrace(c.glibc.data(), 256);
        before = GetUnwindStats();
        c.n_ours = UnwindNative(c.ours.data(), 256);
        if (round == 1) walked_second_round += GetUnwindStats().thread_steps_walked - before.thread_steps_walked;
        return 0;
      });
      SCOPED_TRACE("round " + std::to_string(round) + " depth " + std::to_string(depth));
      ExpectSameAsBacktrace(c);
    }
  }
#if defined(__x86_64__)
  EXPECT_EQ(walked_second_round, 0u) << "a place seen before was walked again";
#endif
}

// Two callers with the same frame layout put the same inner frames at the
// same stack addresses: the return address that differs must stop the reuse.
[[gnu::noinline]] int InnerUnwind(Captured* c) {
  c->n_glibc = backtrace(c->glibc.data(), 256);
  c->n_ours = UnwindNative(c->ours.data(), 256);
  asm volatile("" ::: "memory");
  return c->n_ours;
}
[[gnu::noinline]] int CallerA(Captured* c) { return InnerUnwind(c) + 1; }
[[gnu::noinline]] int CallerB(Captured* c) { return InnerUnwind(c) + 2; }

TEST(UnwinderTest, ADifferentCallerAtTheSameDepthIsNotReused) {
  Captured a, b;
  for (int i = 0; i < 3; ++i) {
    CallerA(&a);
    CallerB(&b);
    ExpectSameAsBacktrace(a);
    ExpectSameAsBacktrace(b);
  }
  ASSERT_GT(a.n_ours, 3);
  EXPECT_NE(a.ours[1], b.ours[1]) << "the callers' return addresses";
}

}  // namespace
}  // namespace tracesmith::capture::stacks
