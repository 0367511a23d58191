// `tracesmith analyze RUN`: where GPU time goes, why GPUs idle, what bounds
// the run, in plain words (or --json for scripts). RUN is one trace or the
// traces of a job (job_loader.h), analysed as one merged trace; when it holds
// several processes, the cross-rank analysis (job/job_report.h) follows
// (and is the `ranks` object of the JSON).
#include <cstdio>
#include <iostream>
#include <optional>

#include "commands.h"
#include "job_loader.h"
#include "progress_line.h"
#include "trace_loader.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/job/job_report.h"

namespace tracesmith::cli {
namespace {

struct AnalyzeCliOptions {
  RunArgs run;
  analysis::LoadOptions load;
  analysis::AnalyzeOptions report;
  analysis::CallSiteRules sites;
  analysis::JobOptions job;
  bool json = false;
  bool strict = false;
  bool quiet = false;
};

int RunAnalyze(const AnalyzeCliOptions& o) {
  if (Status rules = analysis::ValidateCallSiteRules(o.sites); !rules.ok())
    return ReportError(rules);
  auto run = OpenRunSource(o.run, o.strict, "analysing");
  if (!run.ok()) return ReportError(run.status());
  ProgressLine line("analyze", o.quiet);
  analysis::LoadOptions load = o.load;
  load.progress = [&](uint64_t done, uint64_t total) {
    line.Show("reading " + run->name(), double(done) / double(total));
  };
  analysis::CompactTrace trace;
  if (Status st = ReadRun(
          *run, o.strict, "analysing",
          [&](format::TraceSource& source, format::ReadReport* damage) {
            return analysis::LoadCompactTrace(source, load, &trace, damage);
          },
          [&] { line.Done(); });  // before the damage warning
      !st.ok())
    return ReportError(st);
  line.Show("analysing");
  // The job as a whole: the report below covers the merged trace; the
  // cross-rank analysis reads the per-process traces of the run one by one.
  analysis::AnalysisReport report = analysis::BuildReport(trace, run->name(), o.sites);
  if (!o.load.steps.empty()) report.window_note = "steps " + o.load.steps + " of the Steps table";
  std::string why;
  line.Show("cross-rank analysis (when several processes)");
  const std::optional<analysis::JobReport> job =
      analysis::JobReportOf(trace, run->files(), o.job, &why);
  line.Done();
  if (!why.empty())
    std::fprintf(stderr, "tracesmith: warning: no cross-rank analysis: %s\n", why.c_str());
  if (o.json) {
    analysis::WriteJsonReport(report, std::cout, job ? &*job : nullptr);
  } else {
    analysis::WriteTextReport(report, o.report, std::cout);
    if (job) {
      std::cout << "\n";
      analysis::WriteJobText(*job, std::cout);
    }
  }
  std::cout.flush();
  return std::cout ? kExitOk : ReportError(IoError("writing the report to stdout failed"));
}

}  // namespace

void AddAnalyzeCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "analyze",
      "Report where GPU time goes: top kernels, utilization, idle causes, launches, "
      "copies, critical path, findings");
  auto o = std::make_shared<AnalyzeCliOptions>();
  AddRunArguments(cmd, &o->run, "The trace to analyse");
  cmd->add_flag("--json", o->json, "Machine-readable JSON instead of the text report");
  AddWindowOptions(cmd, &o->load);
  cmd->add_option(
      "--site-skip-modules", o->sites.skip_modules,
      "Call sites: frames in modules whose file name matches this regex are not the "
      "call site; replaces the default (the CUDA runtime and libraries, libc, libstdc++)");
  cmd->add_option(
      "--site-skip-functions", o->sites.skip_functions,
      "Call sites: frames whose function matches this regex are not the call site"
      "; replaces the default (cudart internals, cuda*/cu* API entry points, kernel launch stubs)");
  cmd->add_option("--site-library-files", o->sites.library_files,
                  "Call sites: Python files matching this regex are libraries: a launch from one "
                  "is also named by the program's innermost line outside them; replaces the "
                  "default (site-packages, dist-packages, the standard library)");
  cmd->add_option("--site-generated-files", o->sites.generated_files,
                  "Call sites: Python files matching this regex hold compiler-generated code: a "
                  "launch through one is named by the program's line that called it, then the "
                  "generated line; replaces the default (torch.compile's Inductor cache, "
                  "<string> launchers, FX <eval_with_key> code)");
  Opt* top =
      cmd->add_option("--top", o->report.top, "Rows per table in the text report")->default_val(15);
  cmd->add_option(
         "--ntp-bound-us",
         [o](const std::vector<std::string>& v) {
           o->job.clock.ntp_bound_ns = uint64_t(std::stod(v.at(0)) * 1000);
           return true;
         },
         "Several hosts: the assumed bound on their CLOCK_REALTIME difference, before the "
         "collectives narrow it (default 1000 us)")
      ->check(PositiveNumber);
  AddStrictFlag(cmd, &o->strict);
  cmd->add_flag("-q,--quiet", o->quiet, "No progress line on a terminal");
  commands.emplace_back(cmd, [o, top] {
    // The kernels looked inside (GPU instruction samples): 5 unless --top says.
    if (top->count()) o->report.sampled_kernels = o->report.top;
    return RunAnalyze(*o);
  });
}

}  // namespace tracesmith::cli
