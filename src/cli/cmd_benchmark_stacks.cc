// `tracesmith benchmark stacks`: cost of one host call-stack capture
// (TraceSmith's unwinder + dedup lookup, the launch-path cost) against glibc
// backtrace(), at total stack depths 16 and 48, on this machine's CPU; with
// and without the walk memo, with warm caches and with caches cold.
#include <execinfo.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "command.h"
#include "tracesmith/base/clock.h"
#include "tracesmith/base/statistics.h"
#include "tracesmith/capture/capture_cost.h"
#include "tracesmith/stacks/stack_collector.h"
#include "tracesmith/stacks/unwinder.h"

namespace tracesmith::cli {
namespace {

using stacks::StackCollector;
using stacks::StackCollectorOptions;
using stacks::StackMode;

// Calls `leaf` from `depth` extra frames; noinline and not a tail call so
// each level is a real frame.
[[gnu::noinline]] int BenchChain(int depth, const std::function<int()>& leaf) {
  int r = depth <= 0 ? leaf() : BenchChain(depth - 1, leaf);
  asm volatile("" : "+r"(r));
  return r + 1;
}

// Thread CPU time: the cost a capture adds to the launching thread, and
// unlike wall time it does not count time other processes took the core
// (the development machine and CI are shared). Equal on an idle machine.
// Median of `rounds` timings of `iterations` calls of `fn`.
template <typename Fn>
double MedianNs(int rounds, int iterations, Fn fn) {
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    double start = (ThreadCpuSeconds() * 1e9);
    for (int i = 0; i < iterations; ++i) fn();
    t.push_back(((ThreadCpuSeconds() * 1e9) - start) / iterations);
  }
  return Median(std::move(t));
}

// Reads 2 MiB of a 64 MiB buffer, a different part each call, one load per
// 64-byte line: evicts most of L1/L2 and part of L3 as a framework's work
// between two launches does.
void Evict() {
  static std::vector<uint64_t> buffer(size_t{64} << 17);  // 64 MiB
  static size_t at = 0;
  constexpr size_t kWords = (size_t{2} << 20) / 8;
  uint64_t sum = 0;
  for (size_t i = 0; i < kWords; i += 8) sum += buffer[(at + i) % buffer.size()];
  at = (at + kWords) % buffer.size();
  asm volatile("" : : "r"(sum));
}

// Frames seen by backtrace() from a leaf at chain depth `depth`.
int FramesAtDepth(int depth) {
  int frames = 0;
  BenchChain(depth, [&] {
    void* buf[512];
    frames = backtrace(buf, 512);
    return 0;
  });
  return frames;
}

}  // namespace

int RunStacksBenchmark() {
  StackCollectorOptions options;
  options.mode = StackMode::kNative;
  options.max_depth = 256;
  StackCollector collector(options);
  const int base = FramesAtDepth(0);  // frames below the chain (main, CLI, libc)
  for (int target : {16, 48}) {
    int depth = std::max(0, target - base);
    int ours_frames = 0, glibc_frames = 0;
    double ours_ns = 0, glibc_ns = 0, no_memo_ns = 0, cold_ns = 0, cold_no_memo_ns = 0;
    BenchChain(depth, [&] {
      void* buf[512];
      glibc_frames = backtrace(buf, 512);
      uint64_t pcs[512];
      ours_frames = stacks::UnwindNative(pcs, 512);
      collector.CaptureStack();  // first sighting: rules and the stack are cached
      // Launch path cost: unwind + hash + lock-free dedup lookup.
      ours_ns = MedianNs(7, 200000, [&] {
        uint32_t id = collector.CaptureStack();
        asm volatile("" : : "r"(id));
      });
      glibc_ns = MedianNs(7, 20000, [&] {
        int n = backtrace(buf, 512);
        asm volatile("" : : "r"(n));
      });
      // Without the per-thread memo of earlier walks: every frame unwound.
      stacks::SetWalkMemoEnabled(false);
      no_memo_ns = MedianNs(7, 200000, [&] {
        uint32_t id = collector.CaptureStack();
        asm volatile("" : : "r"(id));
      });
      stacks::SetWalkMemoEnabled(true);
      // Cold caches, as inside a real program: between captures, 2 MiB of
      // other memory is read (a framework's work between two launches); the
      // capture alone is timed with the TSC.
      for (bool memo : {true, false}) {
        stacks::SetWalkMemoEnabled(memo);
        std::vector<double> t;
        TickRate rate = TickRate::Start();
        for (int r = 0; r < 7; ++r) {
          uint64_t ticks = 0;
          for (int i = 0; i < 500; ++i) {
            Evict();
            uint64_t t0 = CpuTicks();
            uint32_t id = collector.CaptureStack();
            asm volatile("" : : "r"(id));
            ticks += CpuTicks() - t0;
          }
          t.push_back(double(ticks) / 500);
        }
        (memo ? cold_ns : cold_no_memo_ns) = Median(t) * rate.NsPerTick();
      }
      stacks::SetWalkMemoEnabled(true);
      return 0;
    });
    if (ours_frames != glibc_frames) {
      std::fprintf(stderr, "tracesmith: warning: unwinder found %d frames, backtrace() %d\n",
                   ours_frames, glibc_frames);
    }
    std::printf(
        "frames=%d ours_ns_per_stack=%.1f backtrace_ns_per_stack=%.1f no_memo_ns=%.1f "
        "cold_ns=%.1f cold_no_memo_ns=%.1f\n",
        glibc_frames, ours_ns, glibc_ns, no_memo_ns, cold_ns, cold_no_memo_ns);
  }
  // What the capture-cost accounting adds to each callback: the
  // count, the sampling draw, two TSC reads, the histogram and the maximum.
  double accounting_ns = MedianNs(7, 2000000, [&] {
    capture::CostTimer timer(capture::ThreadCost::Get(), capture::CostSite::kOther);
    timer.Finish();
  });
  std::printf(
      "self_cost_accounting_ns_per_callback=%.2f (every call timed; stack parts in one call in "
      "%u)\n",
      accounting_ns, capture::ThreadCost::kSampleEvery);
  return kExitOk;
}

void AddBenchmarkStacksCommand(Cmd& benchmark, CommandList& commands) {
  auto* sub = benchmark.add_subcommand(
      "stacks", "Host call-stack capture cost vs glibc backtrace() at depths 16 and 48 (CPU)");
  commands.emplace_back(sub, [] { return RunStacksBenchmark(); });
}

}  // namespace tracesmith::cli
