// The exported entry point of libtracesmith-replay-gpu.so: reads a capture,
// replays it and prints one block per launch, or with kReplayFlagJson one
// JSON document (see gpu_replayer.h, replay_json.h).
#include <cstdio>
#include <unordered_map>

#include "tracesmith/format/sbt_reader.h"

#include "tracesmith/replay/gpu_replayer.h"
#include "tracesmith/replay/replay_json.h"

namespace {
// Launches recorded by `profile --replay-capture` carry their correlation id:
// their time in the program is the kernel row with that id in the same file.
void FillRecordedTimes(const char* path, tracesmith::replay::ReplayCapture* cap) {
  bool need = false;
  for (const auto& l : cap->launches) need |= l.recorded_ns == 0 && l.correlation_id != 0;
  if (!need) return;
  auto trace = tracesmith::format::ReadTraceFile(path);
  if (!trace.ok()) return;
  std::unordered_map<uint32_t, uint64_t> ns;
  for (const auto& k : trace->Rows<tracesmith::model::KernelEvent>())
    if (k.end_ns > k.start_ns) ns[k.correlation_id] = k.end_ns - k.start_ns;
  for (auto& l : cap->launches)
    if (l.recorded_ns == 0 && l.correlation_id != 0)
      if (auto it = ns.find(l.correlation_id); it != ns.end()) l.recorded_ns = it->second;
}
}  // namespace

// dlopen entry point for `tracesmith replay` (see gpu_replayer.h). Text:
// one block per launch as it completes. kReplayFlagJson: one JSON document
// at the end (replay_json.h), also when the replay fails (with "error").
extern "C" __attribute__((visibility("default"))) int TracesmithReplayGpuMainV3(
    const char* path, uint32_t iterations, int64_t launch, int device, int flags,
    int64_t range_first, int64_t range_last) {
  using namespace tracesmith;
  using namespace tracesmith::replay;
  const bool json = flags & kReplayFlagJson;
  ReplayRun run;
  run.path = path;
  run.iterations = iterations ? iterations : 1;
  run.launch = launch;
  run.range_first = range_first;
  run.range_last = range_last;
  run.device = device;
  run.same_addresses_only = flags & kReplayFlagSameAddressesOnly;
  auto fail = [&](const Status& st) {
    std::fprintf(stderr, "tracesmith: error: %s\n", st.message().c_str());
    if (json) {
      run.error = st.message();
      std::fputs(FormatReplayJson(run).c_str(), stdout);
    }
    return kReplayError;
  };
  auto reader = format::SbtReader::Open(path);
  if (!reader.ok()) return fail(reader.status());
  auto cap = ReadReplayCapture(**reader);
  // As every command does (cli/trace_loader.h CheckDamage): an error with
  // --strict, else a warning naming what was skipped and where.
  const format::ReadReport& report = (*reader)->report();
  if (!report.clean()) {
    if (flags & kReplayFlagStrict) return fail(report.DamageStatus(path));
    std::fprintf(stderr, "tracesmith: warning: %s; replaying only its readable part:\n%s",
                 report.Headline(path).c_str(), report.Describe().c_str());
  }
  if (!cap.ok()) return fail(cap.status());
  FillRecordedTimes(path, &*cap);
  if (Status v = ValidateCapture(*cap); !v.ok())
    return fail(Status(v.code(), std::string(path) + ": " + v.message()));
  GpuReplayOptions o;
  o.iterations = run.iterations;
  o.launch = launch;
  o.device = device;
  o.allow_relocation = !run.same_addresses_only;
  o.range_first = range_first;
  o.range_last = range_last;
  bool header = false;
  Status st = ReplayOnGpu(
      *cap, o,
      [&](const LaunchOutcome& out) {
        run.launches.push_back(out);
        // Text: printed as each launch completes; a failed launch's error
        // is printed by fail() below.
        if (json || !out.error.empty()) return;
        if (!header) {
          std::fputs(FormatReplayHeader(path, run.device_line).c_str(), stdout);
          header = true;
        }
        std::fputs(FormatLaunchOutcome(out).c_str(), stdout);
        std::fflush(stdout);
      },
      &run.device_line);
  if (!st.ok()) return fail(st);
  if (json) std::fputs(FormatReplayJson(run).c_str(), stdout);
  return ReplayExitCode(run);
}
