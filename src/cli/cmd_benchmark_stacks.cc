// `tracesmith benchmark stacks`: cost of one host call-stack capture
// (TraceSmith's unwinder + dedup lookup, the launch-path cost) against glibc
// backtrace(), at total stack depths 16 and 48, on this machine's CPU.
#include <execinfo.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "command.h"
#include "tracesmith/base/clock.h"
#include "tracesmith/capture/self_cost.h"
#include "tracesmith/capture/stacks/stack_collector.h"
#include "tracesmith/capture/stacks/unwinder.h"

namespace tracesmith::cli {
namespace {

using capture::stacks::StackCollector;
using capture::stacks::StackCollectorOptions;
using capture::stacks::StackMode;

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
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
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
    double ours_ns = 0, glibc_ns = 0;
    BenchChain(depth, [&] {
      void* buf[512];
      glibc_frames = backtrace(buf, 512);
      uint64_t pcs[512];
      ours_frames = capture::stacks::UnwindNative(pcs, 512);
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
      return 0;
    });
    if (ours_frames != glibc_frames) {
      std::fprintf(stderr, "tracesmith: warning: unwinder found %d frames, backtrace() %d\n",
                   ours_frames, glibc_frames);
    }
    std::printf("frames=%d ours_ns_per_stack=%.1f backtrace_ns_per_stack=%.1f\n", glibc_frames,
                ours_ns, glibc_ns);
  }
  // What the capture's self-cost accounting adds to each callback: the
  // count, the sampling draw and, one call in kSampleEvery, two TSC reads.
  double accounting_ns = MedianNs(7, 2000000, [&] {
    capture::CostTimer timer(capture::ThreadCost::Get(), capture::CostSite::kOther);
    timer.Finish();
  });
  std::printf("self_cost_accounting_ns_per_callback=%.2f (one call in %u timed)\n", accounting_ns,
              capture::ThreadCost::kSampleEvery);
  return kExitOk;
}

void AddBenchmarkStacksCommand(CLI::App& benchmark, CommandList& commands) {
  auto* sub = benchmark.add_subcommand(
      "stacks", "Host call-stack capture cost vs glibc backtrace() at depths 16 and 48 (CPU)");
  commands.emplace_back(sub, [] { return RunStacksBenchmark(); });
}

}  // namespace tracesmith::cli
