// A stand-in for libtracesmith-replay-gpu.so with no CUDA in it, for the
// CLI's side of GPU replay on machines without a GPU (replay_command_test.cc):
// built twice: with the entry point (TracesmithReplayGpuMainV5), and with
// FAKE_REPLAY_OTHER_BUILD as a library of another build. It prints what it
// was asked and, like the real one, one block per launch, calling the
// progress hooks as it goes. FAKE_REPLAY_LAUNCHES sets how many launches it
// pretends to replay (default 3), each taking ~60 ms.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tracesmith/replay/gpu_replayer.h"

namespace {

using tracesmith::replay::kReplayFlagJson;
using tracesmith::replay::kReplayFlagWarm;

int Launches() {
  const char* v = std::getenv("FAKE_REPLAY_LAUNCHES");
  return v ? std::atoi(v) : 3;
}

}  // namespace

// With FAKE_REPLAY_OTHER_BUILD: a library of another build, whose entry
// point has another name (an earlier version's).
#ifdef FAKE_REPLAY_OTHER_BUILD
#define FAKE_ENTRY TracesmithReplayGpuMainV4
#else
#define FAKE_ENTRY TracesmithReplayGpuMainV5
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
                "fake replayer: size=%u iterations=%u warm=%d json=%d hooks=%d\n", r->struct_size,
                r->iterations, (r->flags & kReplayFlagWarm) ? 1 : 0,
                (r->flags & kReplayFlagJson) ? 1 : 0, r->on_progress ? 1 : 0);
  say(line);
  std::snprintf(line, sizeof line, "fake replayer node: launch=%lld node=%lld\n",
                static_cast<long long>(r->launch), static_cast<long long>(r->node));
  say(line);
  std::snprintf(line, sizeof line, "fake replayer metrics: %s\n",
                r->metrics ? (*r->metrics ? r->metrics : "(default set)") : "(off)");
  say(line);
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
