// A hand-built trace with the program's own events (AppCounterEvent,
// AppEvent: tracesmith.counter / range / instant), for the format, analysis
// and export tests: 20 steps marked by the program's ranges "step N" on one
// thread, one kernel per step whose length (and the step's) rises from step
// 12 on while the counter "tokens/s" falls with it; "loss" alternates (no
// relation to the step's time); an "eval" range with arguments and a
// "checkpoint" instant in every step, and a counter set from a second thread.
#pragma once

#include <string>

#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

inline constexpr uint32_t kAppPid = 4242, kAppTid = 4243, kAppWorkerTid = 4250;
inline constexpr int kAppSteps = 20;

// Step s (1-based) starts at 1 ms * s and lasts 400 us, or 800 us from step 12 on.
inline uint64_t AppStepBegin(int s) { return 1'000'000ull * s; }
inline uint64_t AppStepLength(int s) { return s >= 12 ? 800'000 : 400'000; }
inline double AppTokensPerSecond(int s) { return s >= 12 ? 500.0 : 1000.0 + s; }
inline double AppLoss(int s) { return s % 2 ? 2.0 : 1.0; }

inline model::Trace AppEventTrace() {
  model::Trace t;
  model::Process p;
  p.pid = kAppPid;
  p.name_id = t.strings.Intern("train.py");
  t.Rows<model::Process>().push_back(p);
  model::Device d;
  d.pid = kAppPid;
  d.name_id = t.strings.Intern("NVIDIA H200");
  t.Rows<model::Device>().push_back(d);
  const uint32_t kernel = t.strings.Intern("gemm"), eval = t.strings.Intern("eval"),
                 tps = t.strings.Intern("tokens/s"), loss = t.strings.Intern("loss"),
                 cp = t.strings.Intern("checkpoint"), worker = t.strings.Intern("queue depth");
  for (int s = 1; s <= kAppSteps; ++s) {
    const uint64_t b = AppStepBegin(s), len = AppStepLength(s);
    model::AppEvent step;
    step.start_ns = b;
    step.end_ns = b + len;
    step.pid = kAppPid;
    step.tid = kAppTid;
    step.name_id = t.strings.Intern("step " + std::to_string(s));
    step.kind = model::kAppRange;
    t.Rows<model::AppEvent>().push_back(step);
    model::KernelEvent k;
    k.start_ns = b + 10'000;
    k.end_ns = b + len - 10'000;
    k.pid = kAppPid;
    k.stream_id = 7;
    k.name_id = k.demangled_id = kernel;
    k.correlation_id = uint32_t(s);
    t.Rows<model::KernelEvent>().push_back(k);
    model::AppEvent e = step;
    e.start_ns = b + 20'000;
    e.end_ns = b + 30'000;
    e.name_id = eval;
    e.args_id = t.strings.Intern("{\"step\": " + std::to_string(s) + "}");
    t.Rows<model::AppEvent>().push_back(e);
    model::AppEvent i = step;
    i.start_ns = i.end_ns = b + 35'000;
    i.name_id = cp;
    i.kind = model::kAppInstant;
    i.args_id = s == 1 ? t.strings.Intern("not json") : 0;
    t.Rows<model::AppEvent>().push_back(i);
    for (auto [name, value, at, tid] :
         {std::tuple{tps, AppTokensPerSecond(s), b + len - 5'000, kAppTid},
          std::tuple{loss, AppLoss(s), b + 100'000, kAppTid},
          std::tuple{loss, AppLoss(s) + 0.5, b + 200'000, kAppTid},
          std::tuple{worker, double(s), b + 300'000, kAppWorkerTid}}) {
      model::AppCounterEvent c;
      c.ts_ns = at;
      c.value = value;
      c.pid = kAppPid;
      c.tid = tid;
      c.name_id = name;
      t.Rows<model::AppCounterEvent>().push_back(c);
    }
  }
  return t;
}

}  // namespace tracesmith::testing
