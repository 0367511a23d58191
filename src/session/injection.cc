// libtracesmith-inject.so: the CUDA driver loads it when CUDA_INJECTION64_PATH
// names it and calls InitializeInjection() during cuInit, in every process
// of the program that initialises CUDA. Options come from TRACESMITH_*
// environment variables (capture_options.h), set by `tracesmith profile`.
//
// The file is always left readable: atexit() writes the final chunks and the
// index; SIGINT/SIGTERM/SIGHUP (when the program has no handler of its own)
// and SIGSEGV/SIGBUS/SIGABRT (best effort) flush, then the signal is raised
// again with its previous disposition; a SIGKILL leaves the chunks written up
// to the last flush period. Nothing here may crash or block the program:
// failures print one warning and the program runs unprofiled.
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "recorders.h"
#include "tracesmith/capture/engine.h"
#include "tracesmith/capture/nvtx_extension.h"
#include "tracesmith/capture/stack_hook.h"

extern "C" int InitializeInjection();

namespace tracesmith::session {
namespace {

std::atomic<bool> g_initialized{false};
bool g_quiet = false;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);
struct sigaction g_previous[kNumSignals];

bool IsFault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGFPE; }

// A fault's thread and native stack on stderr (not with --quiet): whether the
// program or the profiler crashed is the first thing a user needs to know.
// The header before the trace is written, the stack after it: unwinding a
// broken stack may fault again (then the file is already whole), and a fault
// while printing prints nothing more (g_printing). No strsignal (it may lock).
std::atomic<bool> g_printing{false};

const char* FaultName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "Segmentation fault";
    case SIGBUS:
      return "Bus error";
    case SIGABRT:
      return "Aborted";
    default:
      return "Floating-point exception";
  }
}

bool PrintFaultHeader(int sig, const siginfo_t* info) {
  if (g_printing.exchange(true)) return false;
  char head[160];
  // si_addr means an address only for a fault the kernel raised (si_code > 0).
  const int n =
      info && info->si_code > 0 && sig != SIGABRT
          ? std::snprintf(head, sizeof head, "tracesmith: %s (address %p) in thread %ld\n",
                          FaultName(sig), info->si_addr, long(gettid()))
          : std::snprintf(head, sizeof head, "tracesmith: %s in thread %ld\n", FaultName(sig),
                          long(gettid()));
  if (n > 0) (void)!write(2, head, size_t(n) < sizeof head ? size_t(n) : sizeof head - 1);
  return true;
}

void PrintFaultStack() {
  static const char kHead[] = "tracesmith: the faulting thread's native stack:\n";
  (void)!write(2, kHead, sizeof(kHead) - 1);
  void* frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
}

void OnSignal(int sig, siginfo_t* info, void* ctx) {
  int i = 0;
  while (i < kNumSignals && kSignals[i] != sig) ++i;
  if (i == kNumSignals) return;
  const struct sigaction& prev = g_previous[i];
  bool prev_is_handler = !(prev.sa_flags & SA_SIGINFO)
                             ? (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN)
                             : prev.sa_sigaction != nullptr;
  if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN) return;
  // A program that handles SIGINT/SIGTERM itself (Python's KeyboardInterrupt)
  // decides whether to exit; when it does, atexit writes the file.
  if (prev_is_handler && !IsFault(sig)) {
    if (prev.sa_flags & SA_SIGINFO) {
      prev.sa_sigaction(sig, info, ctx);
    } else {
      prev.sa_handler(sig);
    }
    return;
  }
  static const char kMsg[] = "tracesmith: signal received, writing the trace...\n";
  const bool print_stack = !g_quiet && IsFault(sig) && PrintFaultHeader(sig, info);
  if (!g_quiet) (void)!write(2, kMsg, sizeof(kMsg) - 1);
  capture::StopCaptureFromSignal(IsFault(sig) ? 2000 : 5000);
  if (print_stack) PrintFaultStack();
  // Restore and re-raise: the process ends the way it would have without us.
  sigaction(sig, &prev, nullptr);
  if (prev_is_handler) {
    if (prev.sa_flags & SA_SIGINFO) {
      prev.sa_sigaction(sig, info, ctx);
    } else {
      prev.sa_handler(sig);
    }
    return;
  }
  raise(sig);
}

void InstallSignalHandlers() {
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc now, not inside a signal handler
  for (int i = 0; i < kNumSignals; ++i) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = &OnSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(kSignals[i], &sa, &g_previous[i]);
  }
}

void AtExit() {
  Status st = capture::StopCapture();
  if (!st.ok()) std::fprintf(stderr, "tracesmith: error: %s\n", st.ToString().c_str());
}

void AtForkChild() { capture::AbandonCaptureAfterFork(); }

// Test hook (TRACESMITH_TEST_STACK_HOOK=1): stack ids 1, 2, 3, ... per call.
std::atomic<uint32_t> g_test_stack{0};
uint32_t TestStackHook() { return g_test_stack.fetch_add(1, std::memory_order_relaxed) + 1; }

// NVTX reaches CUPTI only through NVTX_INJECTION64_PATH = libcupti. Set it
// when the launcher did not, for NVTX calls made after CUDA init.
void PointNvtxAtCupti() {
  if (getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&InitializeInjection), &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

// NVTX_INJECTION64_PATH names this library (not libcupti directly), so the
// NVTX loader and the CUDA driver load the same libcupti copy that this
// library is linked to: a second CUPTI loaded by path would not see our
// subscription. These forward NVTX's entry points to that libcupti.
using NvtxInitFn = int (*)(void*);
int ForwardNvtx(const char* symbol, void* arg) {
  void* cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!cupti) {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&cuptiSubscribe), &info) && info.dli_fname)
      cupti = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }
  if (!cupti) return 0;
  auto fn = reinterpret_cast<NvtxInitFn>(dlsym(cupti, symbol));
  return fn ? fn(arg) : 0;
}

}  // namespace
}  // namespace tracesmith::session

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    void* get_export_table) {
  const int ok = tracesmith::session::ForwardNvtx("InitializeInjectionNvtx2", get_export_table);
  // CUPTI's functions are in the slots now: the ones with event attributes get a wrapper that
  // reads the caller's payloads before CUPTI runs (nvtx_extension.h).
  if (ok) tracesmith::capture::WrapNvtxCore(get_export_table);
  return ok;
}
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx(
    void* get_export_table) {
  return tracesmith::session::ForwardNvtx("InitializeInjectionNvtx", get_export_table);
}

// NVTX's extension modules (the payload schemas libraries register: NCCL's
// message sizes), loaded from the same NVTX_INJECTION64_PATH (nvtx_extension.cc).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(
    nvtxExtModuleInfo_t* info) {
  return tracesmith::capture::InitializeNvtxExtension(info);
}

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  using namespace tracesmith::session;
  namespace capture = tracesmith::capture;
  if (g_initialized.exchange(true)) return 1;
  auto options = capture::OptionsFromProcessEnv();
  if (!options.ok()) {
    std::fprintf(stderr, "tracesmith: warning: bad capture options (%s); not profiling\n",
                 options.status().message().c_str());
    return 1;
  }
  g_quiet = options->quiet;
  if (getenv(capture::kEnvTestStackHook)) capture::SetStackHook(&TestStackHook);
  if (options->groups & capture::kGroupNvtx) PointNvtxAtCupti();
  tracesmith::Status st = capture::StartCapture(*options, &MakeRecorders);
  if (!st.ok()) {
    std::fprintf(stderr, "tracesmith: warning: %s\n", st.message().c_str());
    return 1;
  }
  if (!options->quiet)
    std::fprintf(stderr, "tracesmith: recording pid %d to %s\n", static_cast<int>(getpid()),
                 capture::CaptureOutputPath().c_str());
  std::atexit(&AtExit);
  pthread_atfork(nullptr, nullptr, &AtForkChild);
  InstallSignalHandlers();
  return 1;
}
