// `tracesmith replay FILE`: re-executes captured kernel launches on the GPU
// (replay payload chunks; needs a CUDA build), or with --dry-run emulates the
// recorded schedule on the CPU with what-if options (no GPU work runs).
#include <cstdio>

#include "commands.h"
#include "progress_line.h"
#include "trace_loader.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/replay/emulator.h"
#include "tracesmith/replay/extract.h"
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
  std::string launch_text;  // --launch N or G.K (node K of graph launch G)
  int64_t launch = -1;
  int64_t node = -1;  // --node K, or from --launch G.K
  int device = 0;
  bool same_addresses_only = false;
  std::string range;
  bool strict = false;
  bool json = false;
  bool warm = false;
  std::string metrics;  // "": off; "default" or names (--metrics[=SET])
  bool quiet = false;
  int64_t extract = -1;  // --extract N
  std::string output;    // -o, with --extract
  bool force = false;
};

// The GPU library's hooks (ReplayGpuRequest) onto the progress line: the
// line shows which launch runs and how far the whole replay is, and is
// erased before the library prints a launch's block.
struct ReplayProgressHooks {
  ProgressLine& line;
  std::string shown;  // the text last shown, to skip unchanged updates
  static void OnProgress(void* context, const replay::ReplayProgress* p) {
    auto* h = static_cast<ReplayProgressHooks*>(context);
    const double fraction = replay::ReplayProgressFraction(*p);
    std::string text = replay::ReplayProgressText(*p);
    const std::string key = text + StrFormat(" %d", int(fraction * 100));
    if (key == h->shown) return;  // a run of a long loop: the percentage has not moved
    h->shown = key;
    h->line.Show(text, fraction);
  }
  static void BeforeOutput(void* context) {
    auto* h = static_cast<ReplayProgressHooks*>(context);
    h->line.Done();
    h->shown.clear();
  }
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
  ProgressLine line("replay", o.quiet || o.json);
  analysis::LoadOptions load;
  load.progress = [&](uint64_t done, uint64_t total) {
    line.Show("reading " + o.path, double(done) / double(total));
  };
  analysis::CompactTrace trace;
  format::ReadReport damage;
  Status st = analysis::LoadCompactTrace(o.path, load, &trace, &damage);
  line.Done();  // before the damage warning
  if (st.ok()) st = CheckDamage(o.path, damage, o.strict, "emulating");
  if (!st.ok()) return ReportError(st);
  line.Show("emulating the schedule");
  auto r = replay::EmulateSchedule(trace, eo);
  line.Done();
  if (!r.ok()) return ReportError(r.status());
  std::fputs((o.json ? replay::FormatEmulationJson(o.path, trace, eo, *r, o.schedule)
                     : replay::FormatEmulation(trace, eo, *r, o.schedule))
                 .c_str(),
             stdout);
  return kExitOk;
}

// --extract N -o FILE: a one-launch reproducer (replay/extract.h); no GPU.
int RunExtract(const ReplayCliOptions& o) {
  if (o.output.empty())
    return ReportError(InvalidArgument("--extract needs -o FILE, the reproducer to write"));
  if (o.dry_run || o.json || o.warm || !o.metrics.empty() || !o.range.empty() || o.launch >= 0)
    return ReportError(InvalidArgument(
        "--extract writes a reproducer and replays nothing: leave out --dry-run, --json, "
        "--warm, --metrics, --range and --launch (replay the reproducer afterwards)"));
  replay::ExtractOptions eo;
  eo.launch = uint64_t(o.extract);
  eo.overwrite = o.force;
  auto s = replay::ExtractLaunch(o.path, o.output, eo);
  if (!s.ok()) return ReportError(s.status());
  std::fputs(replay::FormatExtractSummary(o.output, *s).c_str(), stdout);
  return kExitOk;
}

// The library's exit codes are the CLI's for the same outcomes.
static_assert(replay::kReplayError == kExitError && replay::kReplayGpuError == kExitGpuError);

// --launch N, or G.K: node K of graph launch G.
Status ParseLaunch(ReplayCliOptions* o) {
  if (o->launch_text.empty()) return OkStatus();
  unsigned long long g = 0, k = 0;
  char dot = 0, tail = 0;
  const int n = std::sscanf(o->launch_text.c_str(), "%llu%c%llu%c", &g, &dot, &k, &tail);
  if (!(n == 1 || (n == 3 && dot == '.')) || o->launch_text[0] == '-' ||
      o->launch_text.find_first_not_of("0123456789.") != std::string::npos)
    return InvalidArgument("--launch: '" + o->launch_text +
                           "' is not N or G.K (launch N; node K of graph launch G)");
  o->launch = int64_t(g);
  if (n == 3) {
    if (o->node >= 0 && uint64_t(o->node) != k)
      return InvalidArgument("--launch " + o->launch_text + " and --node " +
                             std::to_string(o->node) + " name different nodes");
    o->node = int64_t(k);
  }
  return OkStatus();
}

int RunReplay(ReplayCliOptions o) {
  if (Status st = ParseLaunch(&o); !st.ok()) return ReportError(st);
  if (o.extract >= 0) return RunExtract(o);
  if (!o.output.empty())
    return ReportError(InvalidArgument("-o is the reproducer written by --extract N"));
  if (o.dry_run && !o.metrics.empty())
    return ReportError(InvalidArgument(
        "--metrics measures hardware counters of the GPU replay: leave out --dry-run (a CPU "
        "emulation has no counters)"));
  if (o.dry_run) return RunDryRun(o);
  if (!o.scale_kernel.empty() || o.remove_sync || o.streams || o.schedule)
    return ReportError(InvalidArgument(
        "--scale-kernel, --remove-sync, --streams and --schedule are what-if options of the "
        "schedule emulation: add --dry-run"));
  replay::ReplayGpuRequest request;
  request.path = o.path.c_str();
  request.iterations = o.iterations;
  request.launch = o.launch;
  request.node = o.node;
  request.device = o.device;
  const std::string metrics = o.metrics == "default" ? "" : o.metrics;
  if (!o.metrics.empty()) request.metrics = metrics.c_str();
  request.flags = (o.same_addresses_only ? replay::kReplayFlagSameAddressesOnly : 0) |
                  (o.strict ? replay::kReplayFlagStrict : 0) |
                  (o.json ? replay::kReplayFlagJson : 0) | (o.warm ? replay::kReplayFlagWarm : 0);
  if (!o.range.empty()) {
    unsigned long long a = 0, b = 0;
    char tail = 0;
    if (std::sscanf(o.range.c_str(), "%llu:%llu%c", &a, &b, &tail) != 2 || b < a)
      return ReportError(InvalidArgument("--range: '" + o.range +
                                         "' is not A:B (launch indices, A <= B, inclusive)"));
    request.range_first = int64_t(a);
    request.range_last = int64_t(b);
  }
  // --json is read by programs (tracesmith.replay() among them): no line.
  ProgressLine line("replay", o.quiet || o.json);
  ReplayProgressHooks hooks{line, ""};
  if (line.on()) {
    request.hook_context = &hooks;
    request.on_progress = &ReplayProgressHooks::OnProgress;
    request.before_output = &ReplayProgressHooks::BeforeOutput;
  }
  auto code = replay::RunGpuReplay(request);
  line.Done();
  if (!code.ok()) return ReportError(code.status());
  return *code;
}

}  // namespace

void AddReplayCommand(Cmd& app, CommandList& commands) {
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
      ->check(Range(1u, 1u << 20));
  cmd->add_option("--schedule", o->schedule,
                  "Dry-run: list the first N ops of the predicted schedule");
  cmd->add_option("--iterations", o->iterations,
                  "GPU replay: replay each launch K times and flag outputs that differ between "
                  "replays (nondeterminism)")
      ->check(Range(1u, 100000u));
  cmd->add_option("--launch", o->launch_text,
                  "GPU replay: only the launch with this index; G.K: node K of graph launch G "
                  "(as --launch G --node K)");
  cmd->add_option("--node", o->node,
                  "GPU replay, with --launch G of a graph launch: only its node K, on inputs "
                  "rebuilt by running the nodes it depends on; the graph's other nodes then run "
                  "and its final memory is compared with the capture")
      ->check(NonNegativeNumber);
  cmd->add_option("--device", o->device, "GPU replay: CUDA device ordinal");
  cmd->add_option("--range", o->range,
                  "GPU replay: launches A to B (inclusive) as one sequence in capture order from "
                  "one initial state; the final memory is compared with the capture");
  cmd->add_flag("--same-addresses-only", o->same_addresses_only,
                "GPU replay: fail when a captured range cannot be mapped at its own address "
                "instead of mapping it elsewhere and rewriting pointers into it");
  cmd->add_flag("--warm", o->warm,
                "GPU replay: also time each launch warm: after the cold replays (inputs restored, "
                "L2 flushed), re-run it K times (--iterations) back to back without restoring its "
                "inputs, as consecutive launches in the program run, and say whether it is "
                "idempotent on its inputs (if not, its warm runs computed on other data and are "
                "not compared with the program); not with --range");
  cmd->add_flag("--metrics{default}", o->metrics,
                "GPU replay: also measure each launch's hardware counters (CUPTI's range "
                "profiler, as Nsight Compute: as many passes as the set needs, its inputs "
                "restored before each): duration, SM and memory throughput as % of peak, "
                "achieved occupancy, DRAM bytes, L2 hit rate, tensor pipe, FLOPs by precision, "
                "arithmetic intensity and a roofline verdict; --metrics=a,b,c measures those "
                "Nsight Compute metric names instead; single launches (not --range)");
  cmd->add_flag("--json", o->json,
                "Machine-readable JSON instead of the text report (GPU replay and --dry-run; "
                "schema: docs/replay-format.md)");
  cmd->add_option("--extract", o->extract,
                  "Write launch N alone (its module, parameters and memory before and after) to "
                  "a small capture for a bug report, -o FILE; it replays with `tracesmith "
                  "replay FILE` on a GPU of the same architecture (no GPU needed to extract)")
      ->check(NonNegativeNumber);
  cmd->add_option("-o,--output", o->output, "With --extract: the reproducer to write");
  cmd->add_flag("-f,--force", o->force, "With --extract: replace an existing output file");
  AddStrictFlag(cmd, &o->strict);
  cmd->add_flag("-q,--quiet", o->quiet, "No progress line on a terminal (none with --json either)");
  cmd->footer(
      "GPU replay times each kernel cold (CUPTI, as profile measures it: inputs restored and the "
      "L2 flushed before each run); --warm adds back-to-back times. Exit codes: 0 every launch "
      "identical to the capture and deterministic, 1 error, 4 some output differed or was "
      "nondeterministic (the same with --json; a kernel that is not idempotent is no failure), "
      "5 a CUDA driver or CUPTI call failed.");
  commands.emplace_back(cmd, [o] { return RunReplay(*o); });
}

}  // namespace tracesmith::cli
