// First-time work kept off the launching thread (docs/capture.md, "First-time
// work off the program's threads"): a thread's stack bounds found without
// /proc/self/maps, and new modules' unwind tables faulted in by
// StackCollector::PrepareModules (the writer thread's), so that the first
// rule for a never-seen return address costs the calling thread no page fault.
#include <dlfcn.h>
#include <execinfo.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "chains.h"
#include "stacks/unwind_rule.h"
#include "tracesmith/stacks/stack_collector.h"
#include "tracesmith/stacks/unwinder.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace tracesmith::stacks {
namespace {

using testing::RecurseChain;

// The whole stack: our walk and backtrace() end at the same outermost frames.
// (Under ASan, backtrace() is intercepted and reports one more inner frame.)
void ExpectWholeStack(const uint64_t* ours, int n, void* const* glibc, int n_glibc) {
  EXPECT_GE(n, n_glibc - 1);
  EXPECT_LE(n, n_glibc);
  for (int k = 0; k + 1 < n && k + 1 < n_glibc; ++k)
    EXPECT_EQ(ours[n - 1 - k], reinterpret_cast<uint64_t>(glibc[n_glibc - 1 - k])) << k;
}

// Runs `fn` on a new thread (its first walk finds its bounds).
template <typename Fn>
void OnNewThread(Fn fn) {
  std::thread t(fn);
  t.join();
}

TEST(FirstTimeTest, ANewThreadsStackBoundsAreNotReadFromProcMaps) {
  // In a large CUDA process /proc/self/maps has thousands of lines: reading
  // it cost a thread's first launch 0.7-3 ms (docs/benchmarks.md).
  const uint64_t before = GetUnwindStats().bounds_from_maps;
  int n = 0, n_glibc = 0;
  OnNewThread([&] {
    RecurseChain(8, [&] {
      uint64_t pcs[256];
      void* glibc[256];
      n_glibc = backtrace(glibc, 256);
      n = UnwindNative(pcs, 256);
      ExpectWholeStack(pcs, n, glibc, n_glibc);  // as backtrace() sees it
      return 0;
    });
  });
  EXPECT_EQ(GetUnwindStats().bounds_from_maps, before);
  EXPECT_GE(n, 9);
  // The main thread too (its first walk may have been in another test).
  const uint64_t before_main = GetUnwindStats().bounds_from_maps;
  uint64_t pcs[64];
  EXPECT_GT(UnwindNative(pcs, 64), 1);
  EXPECT_EQ(GetUnwindStats().bounds_from_maps, before_main);
}

TEST(FirstTimeTest, AWalkDeeperThanTheThreadsFirstStillSeesEveryFrame) {
  // The bounds' bottom starts at the first walk's page and moves down as
  // walks go deeper (pages away: each RecurseChain frame holds a std::function).
  int shallow = 0, deep = 0, deep_glibc = 0;
  OnNewThread([&] {
    uint64_t pcs[512];
    shallow = UnwindNative(pcs, 512);
    RecurseChain(300, [&] {
      uint64_t deep_pcs[512];
      void* glibc[512];
      deep_glibc = backtrace(glibc, 512);
      deep = UnwindNative(deep_pcs, 512);
      ExpectWholeStack(deep_pcs, deep, glibc, deep_glibc);
      return 0;
    });
  });
  EXPECT_GT(shallow, 1);
  EXPECT_GE(deep, 300);
}

// Frames of 4 KiB each, so that the stack a walk reads is far longer than its frame count says.
[[gnu::noinline]] int BigFrames(int depth, const std::function<int()>& leaf) {
  volatile char pad[4096];
  pad[0] = char(depth);
  const int r = depth == 0 ? leaf() : BigFrames(depth - 1, leaf);
  return r + pad[0];  // (not a tail call)
}

TEST(FirstTimeTest, AFirstWalkFarBelowTheTopChecksTheRestOnlyWhenItGoesThere) {
  // A thread's first walk checks 64 KiB of its stack above it; one that reads farther (here
  // 32 frames of 4 KiB) checks the rest up to the top then, and is whole.
  const uint64_t before = GetUnwindStats().bounds_from_maps;
  int n = 0, n_glibc = 0;
  OnNewThread([&] {
    BigFrames(32, [&] {
      uint64_t pcs[256];
      void* glibc[256];
      n_glibc = backtrace(glibc, 256);
      n = UnwindNative(pcs, 256);
      ExpectWholeStack(pcs, n, glibc, n_glibc);
      return 0;
    });
  });
  EXPECT_GE(n, 33);
  EXPECT_EQ(GetUnwindStats().bounds_from_maps, before);
}

TEST(FirstTimeTest, AWalkHigherThanTheCheckedPartOfTheStackChecksTheRest) {
  // The thread's first walk is deep and short (2 frames: it reads nothing above 64 KiB); a
  // later walk from 128 KiB higher still sees every frame.
  int n = 0, n_glibc = 0, first = 0;
  OnNewThread([&] {
    BigFrames(32, [&] {
      uint64_t pcs[2];
      first = UnwindNative(pcs, 2);
      return 0;
    });
    uint64_t pcs[256];
    void* glibc[256];
    n_glibc = backtrace(glibc, 256);
    n = UnwindNative(pcs, 256);
    ExpectWholeStack(pcs, n, glibc, n_glibc);
  });
  EXPECT_EQ(first, 2);
  EXPECT_GE(n, 2);
}

TEST(FirstTimeTest, AThreadOnItsOwnStackBlockIsWalked) {
  // pthread_attr_setstack: glibc puts the thread's descriptor at the top of
  // the given stack too; the walk covers it.
  constexpr size_t kSize = size_t{1} << 20;
  void* stack = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(stack, MAP_FAILED);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  ASSERT_EQ(pthread_attr_setstack(&attr, stack, kSize), 0);
  struct Result {
    int n = 0, n_glibc = 0;
  } result;
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* arg) -> void* {
                  auto* r = static_cast<Result*>(arg);
                  RecurseChain(20, [&] {
                    uint64_t pcs[256];
                    void* glibc[256];
                    r->n_glibc = backtrace(glibc, 256);
                    r->n = UnwindNative(pcs, 256);
                    ExpectWholeStack(pcs, r->n, glibc, r->n_glibc);
                    return 0;
                  });
                  return nullptr;
                },
                &result),
            0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  munmap(stack, kSize);
  EXPECT_GE(result.n, 21);
}

// Page faults of the calling thread so far.
long ThreadFaults();

TEST(FirstTimeTest, AThreadsFirstWalkTakesAMemoPreparedAhead) {
  // The memo's 670 KiB, populated on the thread's first walk, cost it ~170
  // page faults (200-400 us): now it takes one the writer populated.
  PrepareWalkMemos();
  const WalkMemoCounts before = GetWalkMemoCounts();
  long faults = -1;
  int n = 0;
  OnNewThread([&] {
    const long f0 = ThreadFaults();
    uint64_t pcs[64];
    n = UnwindNative(pcs, 64);
    faults = ThreadFaults() - f0;
  });
  const WalkMemoCounts after = GetWalkMemoCounts();
  EXPECT_GT(n, 1);
  EXPECT_EQ(after.taken_ready, before.taken_ready + 1);
  EXPECT_EQ(after.mapped_here, before.mapped_here);
  // The stack's own pages, a rule cache line or two; under ASan also its shadow
  // memory's (37 in CI): still far from a memo populated here (~188). Under
  // TSan the shadow's faults (140 in CI) hide the difference: the counters
  // above say which memo the thread took.
#if defined(__SANITIZE_THREAD__)
  (void)faults;
#elif defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(faults, 96);
#else
  EXPECT_LT(faults, 32);
#endif
  // With none ready, a thread maps its own (not populated).
  OnNewThread([] {
    uint64_t pcs[64];
    (void)UnwindNative(pcs, 64);
  });
  OnNewThread([] {
    uint64_t pcs[64];
    (void)UnwindNative(pcs, 64);
  });
  EXPECT_EQ(GetWalkMemoCounts().mapped_here, after.mapped_here + 1);
}

// Minor faults of the calling thread so far.
long ThreadFaults() {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt + u.ru_majflt;
}

// A copy of a test library under a new name: a module never loaded in this
// process, whose unwind tables no walk has touched.
std::string FreshCopy(const char* from, const char* tag) {
  const std::string to =
      ::testing::TempDir() + "/libts_first_time_" + tag + "_" + std::to_string(getpid()) + ".so";
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  return to;
}

bool PopulateReadWorks() {
  void* p = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bool ok = madvise(p, 4096, MADV_POPULATE_READ) == 0;
  munmap(p, 4096);
  return ok;
}

// The page faults of the calling thread while the unwinder computes the first
// rule for a return address in the last function of a fresh copy of the big
// test library (its FDE pages away from what loading it read), prepared by
// `collector` first or not.
long FaultsOfAFirstRule(StackCollector* collector, const char* tag) {
  const std::string path = FreshCopy(TS_BIGLIB_PATH, tag);
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  if (!lib) return -1;
  auto count = reinterpret_cast<int (*)()>(dlsym(lib, "TsBigLibFunctions"));
  auto function = reinterpret_cast<void* (*)(int)>(dlsym(lib, "TsBigLibFunction"));
  const uintptr_t pc = reinterpret_cast<uintptr_t>(function(count() - 1)) + 1;
  const uint64_t before = collector ? collector->stats().modules_prepared : 0;
  if (collector) {
    collector->PrepareModules();                                 // as the writer does each poll
    EXPECT_EQ(collector->stats().modules_prepared, before + 1);  // this one only
  }
  const long f0 = ThreadFaults();
  UnwindRule rule = ComputeRuleFromEhFrameHdr(FindEhFrameHdr(pc), pc);
  const long faults = ThreadFaults() - f0;
  EXPECT_EQ(rule.kind, RuleKind::kCfa);  // the library's CFI was read
  dlclose(lib);
  std::filesystem::remove(path);
  return faults;
}

TEST(FirstTimeTest, PreparedModulesCostTheFirstRuleNoPageFault) {
  if (!PopulateReadWorks()) GTEST_SKIP() << "MADV_POPULATE_READ needs Linux 5.14";
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "under a sanitizer the reads fault in their shadow memory";
#endif
  StackCollectorOptions options;
  options.mode = StackMode::kNative;
  StackCollector collector(options);
  collector.PrepareModules();  // the modules loaded now (the writer's first call)
  const StackCollectorStats first = collector.stats();
  EXPECT_GT(first.modules_prepared, 0u);
  EXPECT_GT(first.unwind_bytes_prepared, 0u);
  // Nothing loaded since: the next call finds nothing to do.
  collector.PrepareModules();
  EXPECT_EQ(collector.stats().modules_prepared, first.modules_prepared);
  // A library loaded after: the next call prepares it, and only it.
  EXPECT_EQ(FaultsOfAFirstRule(&collector, "prepared"), 0);
  // The control: the same first rule in a fresh copy that nothing prepared
  // faults on the calling thread.
  EXPECT_GT(FaultsOfAFirstRule(nullptr, "unprepared"), 0);
  // A module unloaded since: every module is prepared again (another may
  // have been loaded where it was).
  collector.PrepareModules();
  EXPECT_GE(collector.stats().modules_prepared, 2 * first.modules_prepared);
}

TEST(FirstTimeTest, StacksThroughAPreparedModuleAreTheSame) {
  // A capture through a library prepared (registered, tables faulted in)
  // names the same frames and module as one through a library that is not.
  std::vector<std::vector<model::Frame>> frames;
  std::vector<uint64_t> mappings;
  for (bool prepare : {false, true}) {
    const std::string path = FreshCopy(TS_TESTLIB_PATH, prepare ? "same1" : "same0");
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    auto recurse =
        reinterpret_cast<int (*)(int, int (*)(void*), void*)>(dlsym(lib, "TsLibRecurse"));
    ASSERT_NE(recurse, nullptr);
    StackCollectorOptions options;
    options.mode = StackMode::kNative;
    StackCollector collector(options);
    if (prepare) collector.PrepareModules();
    uint32_t id = 0;
    struct Ctx {
      StackCollector* c;
      uint32_t* id;
    } ctx{&collector, &id};
    recurse(
        6,
        [](void* a) {
          auto* c = static_cast<Ctx*>(a);
          *c->id = c->c->CaptureStack();
          return 0;
        },
        &ctx);
    ASSERT_NE(id, 0u);
    frames.push_back(collector.FramesOf(id));
    mappings.push_back(collector.stats().mappings);
    dlclose(lib);
    std::filesystem::remove(path);
  }
  ASSERT_EQ(frames[0].size(), frames[1].size());
  EXPECT_EQ(mappings[0], mappings[1]);  // the same modules named, registered ahead or not
  for (size_t i = 0; i < frames[0].size(); ++i) {
    EXPECT_EQ(frames[0][i].rel_pc, frames[1][i].rel_pc) << "frame " << i;
    EXPECT_EQ(frames[0][i].mapping_id != 0, frames[1][i].mapping_id != 0) << "frame " << i;
  }
}

}  // namespace
}  // namespace tracesmith::stacks
