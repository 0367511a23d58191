// A stand-in for libtracesmith-replay-gpu.so with no CUDA in it, for the
// CLI's side of GPU replay on machines without a GPU (replay_command_test.cc):
// built three times: with the current entry point (TracesmithReplayGpuMainV5),
// with FAKE_REPLAY_V4 as a library from before graph nodes (V4: the same
// request, no `node`), and with FAKE_REPLAY_V3 as a library from before V4
// (TracesmithReplayGpuMainV3 only). It prints what it was asked and, like the real one, one block
// per launch, calling the progress hooks as it goes. FAKE_REPLAY_LAUNCHES sets how many launches it
// pretends to replay (default 3), each taking ~60 ms.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tracesmith/replay/gpu_replayer.h"

namespace {

using tracesmith::replay::kReplayFlagJson;
using tracesmith::replay::kReplayFlagWarm;

[[maybe_unused]] int Launches() {
  const char* v = std::getenv("FAKE_REPLAY_LAUNCHES");
  return v ? std::atoi(v) : 3;
}

}  // namespace

#ifdef FAKE_REPLAY_V3
extern "C" __attribute__((visibility("default"))) int TracesmithReplayGpuMainV3(
    const char* path, uint32_t iterations, int64_t launch, int, int flags, int64_t, int64_t) {
  std::printf("fake replayer V3: %s iterations=%u launch=%lld json=%d\n", path, iterations,
              static_cast<long long>(launch), (flags & kReplayFlagJson) ? 1 : 0);
  return 0;
}
#else
#ifdef FAKE_REPLAY_V4
#define FAKE_ENTRY TracesmithReplayGpuMainV4
#define FAKE_VERSION 4
#else
#define FAKE_ENTRY TracesmithReplayGpuMainV5
#define FAKE_VERSION 5
// Measures --metrics (the loader looks for this symbol).
extern "C" __attribute__((visibility("default"))) int TracesmithReplayGpuKernelMetrics() {
  return 1;
}
#endif
extern "C" __attribute__((visibility("default"))) int FAKE_ENTRY(
    const tracesmith::replay::ReplayGpuRequest* r) {
  auto say = [r](const char* text) {
    if (r->before_output) r->before_output(r->hook_context);
    std::fputs(text, stdout);
    std::fflush(stdout);
  };
  char line[256];
  std::snprintf(line, sizeof line,
                "fake replayer V%d: size=%u iterations=%u warm=%d json=%d hooks=%d\n", FAKE_VERSION,
                r->struct_size, r->iterations, (r->flags & kReplayFlagWarm) ? 1 : 0,
                (r->flags & kReplayFlagJson) ? 1 : 0, r->on_progress ? 1 : 0);
  say(line);
#if FAKE_VERSION >= 5
  std::snprintf(line, sizeof line, "fake replayer node: launch=%lld node=%lld\n",
                static_cast<long long>(r->launch), static_cast<long long>(r->node));
  say(line);
  std::snprintf(line, sizeof line, "fake replayer metrics: %s\n",
                r->metrics ? (*r->metrics ? r->metrics : "(default set)") : "(off)");
  say(line);
#endif
  const int n = Launches();
  const uint32_t runs = r->iterations * ((r->flags & kReplayFlagWarm) ? 2 : 1);
  for (int i = 0; i < n; ++i) {
    tracesmith::replay::ReplayProgress p;
    p.launches_done = uint64_t(i);
    p.launches_total = uint64_t(n);
    p.index = uint64_t(i);
    p.kernel = "fake_kernel";
    p.replays_total = runs;
    for (uint32_t run = 0; run <= runs; ++run) {
      p.replays_done = run;
      if (r->on_progress) r->on_progress(r->hook_context, &p);
      ::usleep(60000 / (runs + 1));
    }
    std::snprintf(line, sizeof line, "launch %d  fake_kernel\n  output: identical\n", i);
    say(line);
  }
  return 0;
}
#endif
