// The unwinder never faults: corrupted return addresses and saved frame
// pointers, signal frames, alternate signal stacks, small thread stacks.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "chains.h"
#include "tracesmith/stacks/stack_collector.h"
#include "tracesmith/stacks/unwinder.h"

namespace tracesmith::stacks {
namespace {

#if defined(__x86_64__)
// Replaces its own return address and the caller's saved rbp with the given
// values, unwinds, and puts them back before returning. Using
// __builtin_frame_address(0) makes the compiler give this function a frame
// pointer, so [fp] is the saved rbp and [fp+8] the return address.
[[gnu::noinline, gnu::no_sanitize_address]] int UnwindWithCorruptFrame(uint64_t fake_ra,
                                                                       uint64_t fake_rbp,
                                                                       uint64_t* pcs, int max) {
  // volatile: the restoring stores hit a frame about to be popped, which the
  // compiler would otherwise drop as dead.
  auto* fp = static_cast<volatile uint64_t*>(__builtin_frame_address(0));
  if (fp[1] != reinterpret_cast<uint64_t>(__builtin_return_address(0))) return -1;
  uint64_t saved_rbp = fp[0], saved_ra = fp[1];
  fp[0] = fake_rbp;
  fp[1] = fake_ra;
  asm volatile("" ::: "memory");
  int n = UnwindNative(pcs, max);
  asm volatile("" ::: "memory");
  fp[0] = saved_rbp;
  fp[1] = saved_ra;
  return n;
}

TEST(RobustnessTest, CorruptReturnAddressesAndFramePointers) {
  std::mt19937_64 rng(12345);
  Dl_info libc;
  ASSERT_TRUE(dladdr(reinterpret_cast<void*>(&std::abort), &libc));
  Dl_info self;
  ASSERT_TRUE(dladdr(reinterpret_cast<void*>(&UnwindWithCorruptFrame), &self));
  uint64_t stack_here = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  auto pick = [&](int kind) -> uint64_t {
    switch (kind) {
      case 0:
        return rng();
      case 1:
        return reinterpret_cast<uint64_t>(libc.dli_fbase) + rng() % (2 << 20);
      case 2:
        return reinterpret_cast<uint64_t>(self.dli_fbase) + rng() % (1 << 20);
      case 3:
        return stack_here - 8192 + rng() % 16384;  // near the stack, any alignment
      case 4:
        return rng() % 8192;
      default:
        return 0;
    }
  };
  std::vector<uint64_t> pcs(64);
  int ran = 0;
  for (int i = 0; i < 20000; ++i) {
    int n = UnwindWithCorruptFrame(pick(int(rng() % 6)), pick(int(rng() % 6)), pcs.data(), 64);
    if (n < 0) GTEST_SKIP() << "compiler gave the helper no frame pointer";
    ASSERT_LE(n, 64);
    ++ran;
  }
  EXPECT_EQ(ran, 20000);  // reaching here is the assertion: no fault
}
#endif

int g_signal_frames = -1;
void CountFramesOnSignal(int) {
  uint64_t pcs[64];
  g_signal_frames = UnwindNative(pcs, 64);
}

TEST(RobustnessTest, InsideSignalHandlers) {
  struct sigaction sa = {}, old = {};
  sa.sa_handler = &CountFramesOnSignal;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  testing::RecurseChain(5, [] {
    raise(SIGUSR1);
    return 0;
  });
  EXPECT_GE(g_signal_frames, 1);  // at least the handler's caller

  // On an alternate signal stack (outside the thread's stack bounds) the
  // unwinder refuses to read: zero frames, no fault.
  std::vector<char> alt(1 << 16);
  stack_t ss = {}, old_ss = {};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  ASSERT_EQ(sigaltstack(&ss, &old_ss), 0);
  sa.sa_flags = SA_ONSTACK;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
  g_signal_frames = -1;
  raise(SIGUSR1);
  EXPECT_EQ(g_signal_frames, 0);
  sigaltstack(&old_ss, nullptr);
  sigaction(SIGUSR1, &old, nullptr);
}

// A thread whose first walk runs on an alternate signal stack: that stack
// must not be taken for the thread's own (its walks would then all be
// refused); the walk there reads nothing, and the next one, on the thread's
// stack, finds the bounds.
TEST(RobustnessTest, FirstWalkOnAnAlternateSignalStack) {
  struct sigaction sa = {}, old = {};
  sa.sa_handler = &CountFramesOnSignal;
  sa.sa_flags = SA_ONSTACK;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  static int on_alt = -1, after = -1;
  pthread_t t;
  ASSERT_EQ(pthread_create(
                &t, nullptr,
                [](void*) -> void* {
                  // Its own mapping, as a program would allocate it.
                  const size_t size = 1 << 16;
                  void* alt = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                  if (alt == MAP_FAILED) return nullptr;
                  stack_t ss = {};
                  ss.ss_sp = alt;
                  ss.ss_size = size;
                  if (sigaltstack(&ss, nullptr) != 0) return nullptr;
                  pthread_kill(pthread_self(), SIGUSR1);
                  on_alt = g_signal_frames;
                  ss.ss_flags = SS_DISABLE;
                  sigaltstack(&ss, nullptr);
                  munmap(alt, size);
                  testing::RecurseChain(20, [] {
                    uint64_t pcs[64];
                    after = UnwindNative(pcs, 64);
                    return 0;
                  });
                  return nullptr;
                },
                nullptr),
            0);
  pthread_join(t, nullptr);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(on_alt, 0);
  EXPECT_GT(after, 20);
}

// The main thread's stack mapping grows as it is used: bounds found on a
// shallow first walk must still cover the stack once it has grown (down to
// RLIMIT_STACK, as glibc reports it). A fresh process, so that the first
// walk of its main thread is the one here.
[[gnu::noinline, gnu::no_sanitize_address]] int WalkBelow(uintptr_t target, int* levels) {
  // Not instrumented: ASan would move this array off the real stack.
  volatile char pad[16 << 10];
  for (size_t i = sizeof(pad); i > 0; i -= 4096) pad[i - 1] = 0;  // grow page by page
  int n;
  if (reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) > target) {
    ++*levels;
    n = WalkBelow(target, levels);
  } else {
    uint64_t pcs[256];
    n = UnwindNative(pcs, 256);
  }
  pad[0] = 1;
  return n;
}

// The first walk of the process's main thread, then one 1 MiB below the
// lowest page its stack had then; exits 0 if that walk found the whole chain.
[[noreturn]] void GrowTheMainStackAndWalk() {
  uint64_t pcs[64];
  int first = UnwindNative(pcs, 64);
  std::ifstream maps("/proc/self/maps");
  uintptr_t lo = 0, hi = 0, here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  for (std::string line; std::getline(maps, line);) {
    unsigned long a = 0, b = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &a, &b) == 2 && here >= a && here < b) lo = a, hi = b;
  }
  int levels = 0;
  int n = lo ? WalkBelow(lo - (1 << 20), &levels) : 0;
  std::fprintf(stderr, "first walk %d frames; stack [%#lx, %#lx); %d levels down: %d frames\n",
               first, static_cast<unsigned long>(lo), static_cast<unsigned long>(hi), levels, n);
  std::_Exit(first > 0 && lo != 0 && n > levels ? 0 : 1);
}

TEST(RobustnessTest, MainStackGrowsBeyondTheFirstWalk) {
  struct rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_STACK, &limit), 0);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < (4u << 20))
    GTEST_SKIP() << "RLIMIT_STACK below 4 MiB";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a new process, not a fork
  EXPECT_EXIT(GrowTheMainStackAndWalk(), ::testing::ExitedWithCode(0), "");
}

TEST(RobustnessTest, SmallThreadStacks) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  static int frames = 0;
  pthread_t t;
  ASSERT_EQ(pthread_create(
                &t, &attr,
                [](void*) -> void* {
                  testing::RecurseChain(100, [] {
                    uint64_t pcs[256];
                    frames = UnwindNative(pcs, 256);
                    return 0;
                  });
                  return nullptr;
                },
                nullptr),
            0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_GT(frames, 100);  // the whole chain, up to the thread's start
}

}  // namespace
}  // namespace tracesmith::stacks
