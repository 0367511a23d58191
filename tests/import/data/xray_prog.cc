// The program behind the XRay fixtures (make_xray_fixtures.sh builds it with
// clang -fxray-instrument and runs it in basic and FDR mode). It exercises
// nesting, recursion, two extra threads, a logged argument, a custom and a
// typed event, and a call long enough (2.2 s) for FDR mode to write a TSC
// wrap record.
#include <xray/xray_interface.h>
#include <xray/xray_log_interface.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace demo {
[[gnu::noinline]] void Spin(int us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}
[[gnu::noinline]] int Fib(int n) {
  Spin(1);
  return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
}
struct Worker {
  [[gnu::noinline]] void Step(int i) { Spin(20 + i); }
};
}  // namespace demo

[[clang::xray_always_instrument, clang::xray_log_args(1)]] [[gnu::noinline]] int WithArg(int x) {
  demo::Spin(10);
  return x * 2;
}
// A guaranteed tail call: XRay logs Twice's exit (a tail-exit record) before the jump.
[[gnu::noinline]] int Twice(int x) { [[clang::musttail]] return WithArg(x + 1); }

// The runtime's typed-event trampoline, called directly: clang 14's typed
// event sled pushes three registers and leaves the stack misaligned for it.
extern "C" void __xray_TypedEvent(unsigned short, const void*, unsigned long);

// Not a leaf (it calls Spin): clang 14's event sleds push registers below the
// stack pointer, which in a leaf function is the red zone.
[[gnu::noinline]] void Emit() {
  char msg[16] = "hello";
  demo::Spin(1);
  __xray_customevent(msg, 6);
  demo::Spin(1);
  __xray_TypedEvent(7, msg, 6);
  demo::Spin(1);
}

[[gnu::noinline]] void LongSleep() { std::this_thread::sleep_for(std::chrono::milliseconds(2200)); }

[[gnu::noinline]] void ThreadMain(int id) {
  demo::Worker w;
  for (int i = 0; i < 3; ++i) w.Step(i + id);
  demo::Fib(6);
}

int main(int argc, char** argv) {
  bool fdr = argc > 1 && std::strcmp(argv[1], "--fdr") == 0;
  // FDR mode is selected by XRAY_OPTIONS but starts only when initialised;
  // small buffers so that each thread fills several.
  if (fdr && __xray_log_init_mode("xray-fdr", "func_duration_threshold_us=0 buffer_size=1024") !=
                 XRayLogInitStatus::XRAY_LOG_INITIALIZED)
    return 2;
  int s = 0;
  for (int i = 0; i < 3; ++i) s += Twice(i);
  Emit();
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i) ts.emplace_back(ThreadMain, i);
  for (auto& t : ts) t.join();
  s += demo::Fib(8);
  LongSleep();
  s += demo::Fib(3);
  if (fdr) {  // FDR keeps the log in memory until it is finalised and flushed
    __xray_log_finalize();
    __xray_log_flushLog();
  }
  std::printf("%d\n", s);
  return 0;
}
