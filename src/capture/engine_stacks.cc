// CuptiEngine, host call stacks: the collector behind the launch-entry hook.
//
// Order on the writer thread (DrainStacks): the (correlation -> stack) pairs
// first, then the collector's new Mapping/Frame/StackNode rows, so every
// stack id that an event row references was appended before the event.
#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <string_view>

#include "cupti_engine.h"
#include "tracesmith/base/hot_path.h"
#include "tracesmith/capture/stack_hook.h"
#include "tracesmith/stacks/unwinder.h"

namespace tracesmith::capture {
namespace {

std::atomic<stacks::StackCollector*> g_collector{nullptr};

uint32_t CollectorHook() {
  stacks::StackCollector* c = g_collector.load(std::memory_order_acquire);
  return c ? c->CaptureStack() : 0;
}

// Inside libtracesmith-inject.so the collector drops our own frames; when
// the engine is linked into the program (Session), our module is the
// program itself and must be kept.
bool RunningAsInjectionLibrary() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&CollectorHook), &info) || !info.dli_fname) return false;
  return std::string_view(info.dli_fname).find("libtracesmith-inject") != std::string_view::npos;
}

// The copy probe (TRACESMITH_STACK_COPYPROBE=1, docs/capture.md): what it
// would cost to copy the stack a walk reads, for unwinding elsewhere later
// (as `perf --call-graph dwarf` does), measured in the program rather than
// estimated. Before each timed walk, the span from the caller's frame to
// the outermost frame of the thread's previous whole-replayed walk is
// copied into a per-thread buffer (64 KiB, kept for the thread's life; a
// diagnostic). Spans over 64 KiB, and the first stack of a thread, are not
// copied. The span is all stack above the current frame (the thread's stack
// is one mapping), so every byte read is mapped. Its time is left out of the
// launch's figure (t_diagnostic_ticks).
constexpr size_t kProbeBytes = size_t{1} << 16;
thread_local uint64_t t_probe_top = 0;
thread_local uint8_t* t_probe_buffer = nullptr;

void ProbeCopy(ThreadCost* tc, const stacks::CallerFrame& from) {
  const uint64_t top = t_probe_top;
  if (top <= from.cfa || top - from.cfa > kProbeBytes) return;
  const uint64_t d0 = CpuTicks();
  if (!t_probe_buffer) {
    void* p =
        mmap(nullptr, kProbeBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      t_diagnostic_ticks += CpuTicks() - d0;
      return;
    }
    t_probe_buffer = static_cast<uint8_t*>(p);
  }
  const size_t n = size_t(top - from.cfa);
  const uint64_t t0 = CpuTicks();
  stacks::CopyStackBytes(t_probe_buffer, from.cfa, n);
  tc->AddSample(CostSite::kStackCopy, CpuTicks() - t0);
  ThreadCost::Bump(tc->copy_bytes, n);
  t_diagnostic_ticks += CpuTicks() - d0;  // (the buffer's mapping included)
}

}  // namespace

void CuptiEngine::StartStacks() {
  if (options_.stacks == stacks::StackMode::kNone) return;
  if (GetStackHook()) {  // a hook set by the embedding program or a test
    stack_mode_ = "external";
    return;
  }
  const stacks::StackMode mode = options_.stacks.value_or(stacks::DefaultStackMode());
  if (mode == stacks::StackMode::kNone) return;
  stacks::StackCollectorOptions so;
  so.mode = mode;
  so.max_depth = static_cast<int>(options_.stack_depth);
  so.trim_modules = {"libcupti.so", "libcuda.so"};
  so.trim_own_module = RunningAsInjectionLibrary();
  // A new stack is interned on the writer (issue #41 item 2: a cold PyTorch stack's ~100 new
  // frames and nodes took 38-110 us of one CUDA call): the rows get final ids as they are
  // written (AttachWriter).
  so.defer_interning = options_.tuning.defer_stack_interning;
  collector_ = std::make_unique<stacks::StackCollector>(so);
  if (sbt_) collector_->AttachWriter(sbt_.get());
  stack_mode_ = stacks::StackModeName(mode);
  g_collector.store(collector_.get(), std::memory_order_release);
  SetStackHook(&CollectorHook);
}

void CuptiEngine::StopStacks() {
  if (!collector_) return;
  SetStackHook(nullptr);
  // The collector stays alive: a launch on another thread may still be
  // inside CaptureStack. It is small and the capture is over.
  (void)collector_.release();
}

TS_HOT uint32_t CuptiEngine::TakeStack(ThreadCost* tc, bool timed,
                                       const stacks::CallerFrame& from) {
  ThreadCost::Bump(tc->calls[int(CostSite::kStack)], 1);
  stacks::StackCollector* c = collector_.get();
  if (!c) {
    StackHook hook = GetStackHook();  // a hook set by the embedding program or a test
    return hook ? hook() : 0;
  }
  if (!timed) return c->CaptureStack(nullptr, &from);
  // Diagnostics (CaptureTuning, docs/capture.md): each timed stack walked
  // twice, the second walk timed as capture.cost.stack.rewalk; the stack span
  // a walk reads copied first, timed as capture.cost.stack.copy.
  const bool rewalk = options_.tuning.stack_rewalk;
  const bool copy_probe = options_.tuning.stack_copy_probe;
  if (copy_probe && from.ra) ProbeCopy(tc, from);
  stacks::StackTiming st;
  st.rewalk = rewalk;
  uint64_t t0 = CpuTicks(), first0 = t_first_time_ticks;
  uint32_t id = c->CaptureStack(&st, &from);
  if (copy_probe && st.last_cfa) t_probe_top = st.last_cfa;
  uint64_t total = CpuTicks() - t0 - (t_first_time_ticks - first0);
  if (rewalk) {
    total -= st.rewalk_ticks < total ? st.rewalk_ticks : total;
    tc->AddSample(CostSite::kStackRewalk, st.rewalk_ticks);
    t_diagnostic_ticks += st.rewalk_ticks;
  }
  tc->AddSample(CostSite::kStack, total);
  tc->AddSample(CostSite::kStackUnwind, st.unwind_ticks);
  tc->AddSample(CostSite::kStackPython, st.python_ticks);
  ThreadCost::Bump(tc->frames_native, uint64_t(st.native_frames));
  ThreadCost::Bump(tc->frames_python, uint64_t(st.python_frames));
  return id;
}

void CuptiEngine::PrepareStackModules() {
  if (!collector_) return;
  collector_->PrepareModules();
  stacks::PrepareWalkMemos();
}

void CuptiEngine::DrainStacks() {
  stacks_.Drain();
  if (collector_) collector_->Drain(sbt_.get());
}

}  // namespace tracesmith::capture
