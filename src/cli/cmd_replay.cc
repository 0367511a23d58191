// `tracesmith replay FILE`: re-executes captured kernel launches on the GPU
// (replay payload chunks; needs a CUDA build), or with --dry-run emulates the
// recorded schedule on the CPU with what-if options (no GPU work runs).
#include <cstdio>

#include "commands.h"
#include "trace_loader.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/replay/emulator.h"
#include "tracesmith/replay/gpu_replayer.h"

namespace tracesmith::cli {
namespace {

struct ReplayCliOptions {
  std::string path;
  bool dry_run = false;
  std::vector<std::string> scale_kernel;
  bool remove_sync = false;
  uint32_t streams = 0;
  size_t schedule = 0;
  uint32_t iterations = 1;
  int64_t launch = -1;
  int device = 0;
  bool same_addresses_only = false;
  std::string range;
  bool strict = false;
  bool json = false;
};

int RunDryRun(const ReplayCliOptions& o) {
  replay::EmulationOptions eo;
  for (const std::string& spec : o.scale_kernel) {
    auto s = replay::ParseKernelScale(spec);
    if (!s.ok()) return ReportError(s.status());
    eo.scale_kernels.push_back(*s);
  }
  eo.remove_sync = o.remove_sync;
  eo.streams = o.streams;
  eo.op_times = false;  // the summary needs only the first --schedule ops
  eo.schedule_rows = o.schedule;
  analysis::CompactTrace trace;
  format::ReadReport damage;
  Status st = analysis::LoadCompactTrace(o.path, analysis::LoadOptions{}, &trace, &damage);
  if (st.ok()) st = CheckDamage(o.path, damage, o.strict, "emulating");
  if (!st.ok()) return ReportError(st);
  auto r = replay::EmulateSchedule(trace, eo);
  if (!r.ok()) return ReportError(r.status());
  std::fputs((o.json ? replay::FormatEmulationJson(o.path, trace, eo, *r, o.schedule)
                     : replay::FormatEmulation(trace, eo, *r, o.schedule))
                 .c_str(),
             stdout);
  return kExitOk;
}

int RunReplay(const ReplayCliOptions& o) {
  if (o.dry_run) return RunDryRun(o);
  if (!o.scale_kernel.empty() || o.remove_sync || o.streams || o.schedule)
    return ReportError(InvalidArgument(
        "--scale-kernel, --remove-sync, --streams and --schedule are what-if options of the "
        "schedule emulation: add --dry-run"));
  int64_t first = -1, last = -1;
  if (!o.range.empty()) {
    unsigned long long a = 0, b = 0;
    char tail = 0;
    if (std::sscanf(o.range.c_str(), "%llu:%llu%c", &a, &b, &tail) != 2 || b < a)
      return ReportError(InvalidArgument("--range: '" + o.range +
                                         "' is not A:B (launch indices, A <= B, inclusive)"));
    if (o.launch >= 0)
      return ReportError(InvalidArgument("--range and --launch exclude each other"));
    first = int64_t(a);
    last = int64_t(b);
  }
  auto entry = replay::LoadGpuReplayer();
  if (!entry.ok()) return ReportError(entry.status());
  const int flags = (o.same_addresses_only ? replay::kReplayFlagSameAddressesOnly : 0) |
                    (o.strict ? replay::kReplayFlagStrict : 0) |
                    (o.json ? replay::kReplayFlagJson : 0);
  return (*entry)(o.path.c_str(), o.iterations, o.launch, o.device, flags, first, last);
}

}  // namespace

void AddReplayCommand(CLI::App& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "replay",
      "Re-run captured kernel launches on the GPU and compare outputs; --dry-run: emulate the "
      "recorded schedule on the CPU");
  auto o = std::make_shared<ReplayCliOptions>();
  cmd->add_option("file", o->path, "SBT trace or replay capture")->required();
  cmd->add_flag("--dry-run", o->dry_run,
                "Emulate the recorded schedule on the CPU with recorded durations (no GPU)");
  cmd->add_option("--scale-kernel", o->scale_kernel,
                  "Dry-run what-if: REGEX=FACTOR multiplies matching kernels' durations "
                  "(repeatable; the first matching pattern applies)");
  cmd->add_flag("--remove-sync", o->remove_sync,
                "Dry-run what-if: drop stream/device synchronize waits");
  cmd->add_option("--streams", o->streams,
                  "Dry-run what-if: map each device's streams round-robin onto N streams")
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--schedule", o->schedule,
                  "Dry-run: list the first N ops of the predicted schedule");
  cmd->add_option("--iterations", o->iterations,
                  "GPU replay: replay each launch K times and flag outputs that differ between "
                  "replays (nondeterminism)")
      ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--launch", o->launch, "GPU replay: only the launch with this index");
  cmd->add_option("--device", o->device, "GPU replay: CUDA device ordinal");
  cmd->add_option("--range", o->range,
                  "GPU replay: launches A to B (inclusive) as one sequence in capture order from "
                  "one initial state; the final memory is compared with the capture");
  cmd->add_flag("--same-addresses-only", o->same_addresses_only,
                "GPU replay: fail when a captured range cannot be mapped at its own address "
                "instead of mapping it elsewhere and rewriting pointers into it");
  cmd->add_flag("--json", o->json,
                "Machine-readable JSON instead of the text report (GPU replay and --dry-run; "
                "schema: docs/replay-format.md)");
  AddStrictFlag(cmd, &o->strict);
  cmd->footer(
      "GPU replay exit codes: 0 every launch identical to the capture and deterministic, 1 "
      "error, 4 some output differed or was nondeterministic (the same with --json).");
  commands.emplace_back(cmd, [o] { return RunReplay(*o); });
}

}  // namespace tracesmith::cli
