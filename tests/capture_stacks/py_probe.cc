// A ctypes-loadable probe: lets a real `python3` process drive a
// StackCollector, so Python frame walking is tested inside the
// interpreter's own executable (as in production), not only embedded.
#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tracesmith/base/clock.h"
#include "tracesmith/base/first_time_cost.h"
#include "tracesmith/stacks/stack_collector.h"
#include "tracesmith/stacks/unwinder.h"

using tracesmith::stacks::StackCollector;
using tracesmith::stacks::StackCollectorOptions;
using tracesmith::stacks::StackMode;

namespace {
StackCollector* g_collector = nullptr;
}

extern "C" {

// mode: 0 none, 1 native, 2 python, 3 mixed, 4 full (StackMode).
[[gnu::visibility("default")]] int TsProbeInit(int mode) {
  StackCollectorOptions o;
  o.mode = StackMode(mode);
  g_collector = new StackCollector(o);  // lives until exit
  return 0;
}

[[gnu::visibility("default"), gnu::noinline]] unsigned TsProbeCapture() {
  return g_collector->CaptureStack();
}

// Thread CPU nanoseconds per CaptureStack over `iterations` calls from
// here (after one warm-up call): the launch-path cost with this stack.
[[gnu::visibility("default")]] double TsProbeTime(int iterations) {
  auto cpu_ns = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
  };
  g_collector->CaptureStack();
  double start = cpu_ns();
  for (int i = 0; i < iterations; ++i) {
    unsigned id = g_collector->CaptureStack();
    asm volatile("" : : "r"(id));
  }
  return (cpu_ns() - start) / iterations;
}

// The first-time work done ahead, as the capture's writer thread does
// (python_first_time.py): new modules' unwind tables, walk memos.
[[gnu::visibility("default")]] void TsProbePrepare() {
  g_collector->PrepareModules();
  tracesmith::stacks::PrepareWalkMemos();
}

// The calling thread's first-time work so far, in TSC ticks, and the
// TSC's ns per tick (python_first_time.py).
[[gnu::visibility("default")]] unsigned long long TsProbeFirstTimeTicks() {
  return tracesmith::t_first_time_ticks;
}
[[gnu::visibility("default")]] double TsProbeNsPerTick() {
  static const double ns_per_tick = [] {
    tracesmith::TickRate rate = tracesmith::TickRate::Start();
    timespec pause{0, 20000000};
    nanosleep(&pause, nullptr);
    return rate.NsPerTick();
  }();
  return ns_per_tick;
}

// One line per frame, innermost first: "P function|file|line" or "N".
[[gnu::visibility("default")]] int TsProbeDescribe(unsigned stack_id, char* buf, int len) {
  std::string out;
  std::vector<uint32_t> ids = g_collector->FrameIdsOf(stack_id);
  std::vector<tracesmith::model::Frame> frames = g_collector->FramesOf(stack_id);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (frames[i].kind == tracesmith::model::kFramePython) {
      auto [fn, file] = g_collector->PythonFrameStrings(ids[i]);
      out += "P " + fn + "|" + file + "|" + std::to_string(frames[i].line) + "\n";
    } else {
      out += "N\n";
    }
  }
  if (int(out.size()) >= len) return -1;
  std::memcpy(buf, out.c_str(), out.size() + 1);
  return int(out.size());
}

}  // extern "C"
