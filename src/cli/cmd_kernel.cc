// `tracesmith kernel RUN NAME`: the kernel page — one GPU function of a run
// captured with --pc-sampling or --sass-counts, source line by source line
// with the SASS under each and their samples and stall reasons or exact
// execution counts (and an opcode histogram), and the code that launched it
// (analysis/kernel_page.h); `--launch N`: the page of the launch with
// correlation id N, with the samples joined to that launch; --json for scripts.
#include <iostream>
#include <optional>

#include "commands.h"
#include "job_loader.h"
#include "progress_line.h"
#include "trace_loader.h"
#include "tracesmith/analysis/kernel_page.h"
#include "tracesmith/analysis/report.h"

namespace tracesmith::cli {
namespace {

struct KernelCliOptions {
  RunArgs run;
  std::string trace, name;
  uint32_t launch_id = 0, pid = 0;              // --launch N, --pid P
  std::optional<analysis::LaunchQuery> launch;  // from them, when --launch is given
  bool json = false;
  bool strict = false;
  bool quiet = false;
};

int RunKernel(const KernelCliOptions& o) {
  RunArgs args = o.run;
  args.names = {o.trace};
  auto run = OpenRunSource(args, o.strict, "reading");
  if (!run.ok()) return ReportError(run.status());
  ProgressLine line("kernel", o.quiet);
  analysis::LoadOptions load;
  load.progress = [&](uint64_t done, uint64_t total) {
    line.Show("reading " + run->name(), double(done) / double(total));
  };
  analysis::CompactTrace trace;
  format::TraceSource* source = nullptr;  // re-read for one launch's page
  if (Status st = ReadRun(
          *run, o.strict, "reading",
          [&](format::TraceSource& s, format::ReadReport* damage) {
            source = &s;
            return analysis::LoadCompactTrace(s, load, &trace, damage);
          },
          [&] { line.Done(); });
      !st.ok())
    return ReportError(st);
  auto page = o.launch
                  ? analysis::BuildLaunchPage(trace, *source, *o.launch, analysis::CallSiteRules{})
                  : analysis::BuildKernelPage(trace, o.name, analysis::CallSiteRules{});
  if (!page.ok()) return ReportError(page.status());
  if (o.json)
    analysis::WriteKernelPageJson(*page, std::cout);
  else
    analysis::WriteKernelPageText(*page, std::cout);
  std::cout.flush();
  return std::cout ? kExitOk : ReportError(IoError("writing the page to stdout failed"));
}

}  // namespace

void AddKernelCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "kernel",
      "One GPU kernel of a --pc-sampling or --sass-counts capture: samples and stall reasons, or "
      "exact execution counts and an opcode histogram, per source line and SASS instruction, and "
      "the code that launched it; or one launch of it (--launch N)");
  auto o = std::make_shared<KernelCliOptions>();
  cmd->add_option("trace", o->trace,
                  "The trace (captured with profile --pc-sampling or --sass-counts), a directory "
                  "of a run's traces, "
                  "or a capture's output name (run.sbt also reads run.rank*.sbt and run.pid*.sbt)")
      ->required();
  cmd->add_option("name", o->name,
                  "Part of the kernel's name (demangled or mangled); of several matches, the one "
                  "with most GPU time. With --launch, optional: the kernel of a graph launch");
  Opt* launch_opt = cmd->add_option(
      "--launch", o->launch_id,
      "One launch: its correlation id (`view --kind kernel` shows each launch's correlation_id). "
      "The page of its kernel with only the samples joined to it (the drain windows it ran in, "
      "shared with the kernel's other launches there by how long each ran), and its time");
  Opt* pid_opt = cmd->add_option(
      "--pid", o->pid,
      "With --launch, in a run of several processes: the process of the launch (correlation ids "
      "are per process)");
  cmd->add_flag(
      "--single", o->run.single,
      "Read only the file named, not the other traces of its run (FILE.rank*, FILE.pid*)");
  cmd->add_flag("--json", o->json, "Machine-readable JSON instead of the text page");
  AddStrictFlag(cmd, &o->strict);
  cmd->add_flag("-q,--quiet", o->quiet, "No progress line on a terminal");
  commands.emplace_back(cmd, [o, launch_opt, pid_opt] {
    if (pid_opt->count() && !launch_opt->count())
      return ReportError(InvalidArgument("--pid goes with --launch N"));
    if (launch_opt->count()) {
      o->launch = analysis::LaunchQuery{o->launch_id, std::nullopt, o->name};
      if (pid_opt->count()) o->launch->pid = o->pid;
    } else if (o->name.empty()) {
      return ReportError(
          InvalidArgument("name a kernel (part of its name) or one launch (--launch N)"));
    }
    return RunKernel(*o);
  });
}

}  // namespace tracesmith::cli
