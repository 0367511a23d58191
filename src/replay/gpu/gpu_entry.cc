// The exported entry point of libtracesmith-replay-gpu.so: reads a capture,
// replays it and prints one block per launch, or with kReplayFlagJson one
// JSON document (see gpu_replayer.h, replay_json.h).
#include <cstdio>
#include <string>

#include "tracesmith/format/sbt_reader.h"

#include "tracesmith/replay/gpu_replayer.h"
#include "tracesmith/replay/recorded_times.h"
#include "tracesmith/replay/replay_json.h"

// dlopen entry point for `tracesmith replay` (see gpu_replayer.h). Text:
// one block per launch as it completes. kReplayFlagJson: one JSON document
// at the end (replay_json.h), also when the replay fails (with "error").
extern "C" __attribute__((visibility("default"))) int TracesmithReplayGpuMainV5(
    const tracesmith::replay::ReplayGpuRequest* request) {
  using namespace tracesmith;
  using namespace tracesmith::replay;
  // Fields appended after V5 are read only when request->struct_size
  // covers them; V5's own fields (`node` is the last) are all required.
  if (!request || request->struct_size < sizeof(ReplayGpuRequest) || !request->path) {
    std::fprintf(stderr, "tracesmith: error: %s called with a request it cannot read (size %u)\n",
                 kReplayGpuEntryName, request ? request->struct_size : 0u);
    return kReplayError;
  }
  const ReplayGpuRequest& r = *request;
  const bool json = r.flags & kReplayFlagJson;
  // Everything the library writes goes through here: the caller erases its
  // progress line first.
  auto say = [&r](FILE* f, const std::string& text) {
    if (r.before_output) r.before_output(r.hook_context);
    std::fputs(text.c_str(), f);
    std::fflush(f);
  };
  ReplayRun run;
  run.path = r.path;
  run.iterations = r.iterations ? r.iterations : 1;
  run.launch = r.launch;
  run.node = r.node;
  run.range_first = r.range_first;
  run.range_last = r.range_last;
  run.device = r.device;
  run.same_addresses_only = r.flags & kReplayFlagSameAddressesOnly;
  run.warm = r.flags & kReplayFlagWarm;
  auto fail = [&](const Status& st) {
    say(stderr, "tracesmith: error: " + st.message() + "\n");
    run.error = st.message();
    run.gpu_error = st.code() == StatusCode::kGpuError;
    if (json) say(stdout, FormatReplayJson(run));
    return ReplayExitCode(run);
  };
  if (Status v = ValidateReplayRequest(r); !v.ok()) return fail(v);
  auto reader = format::SbtReader::Open(r.path);
  if (!reader.ok()) return fail(reader.status());
  auto cap = format::ReadReplayCapture(**reader);
  // As every command does (cli/trace_loader.h CheckDamage): an error with
  // --strict, else a warning naming what was skipped and where.
  const format::ReadReport& report = (*reader)->report();
  if (!report.clean()) {
    if (r.flags & kReplayFlagStrict) return fail(report.DamageStatus(r.path));
    say(stderr, "tracesmith: warning: " + report.Headline(r.path) +
                    "; replaying only its readable part:\n" + report.Describe());
  }
  if (!cap.ok()) return fail(cap.status());
  FillRecordedTimes(r.path, &*cap);
  if (Status v = format::ValidateCapture(*cap); !v.ok())
    return fail(Status(v.code(), std::string(r.path) + ": " + v.message()));
  GpuReplayOptions o;
  o.iterations = run.iterations;
  o.launch = r.launch;
  o.node = r.node;
  o.device = r.device;
  o.allow_relocation = !run.same_addresses_only;
  o.range_first = r.range_first;
  o.range_last = r.range_last;
  o.warm = run.warm;
  if (r.metrics) o.metrics = ParseKernelMetrics(r.metrics);
  if (r.on_progress)
    o.progress = [&r](const ReplayProgress& p) { r.on_progress(r.hook_context, &p); };
  bool header = false;
  Status st = ReplayOnGpu(
      *cap, o,
      [&](const LaunchOutcome& out) {
        run.launches.push_back(out);
        // Text: printed as each launch completes; a failed launch's error
        // is printed by fail() below.
        if (json || !out.error.empty()) return;
        std::string text = header ? "" : FormatReplayHeader(r.path, run.device_line);
        header = true;
        say(stdout, text + FormatLaunchOutcome(out));
      },
      &run.device_line);
  if (!st.ok()) return fail(st);
  if (json) say(stdout, FormatReplayJson(run));
  return ReplayExitCode(run);
}
