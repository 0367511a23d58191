// `tracesmith memory RUN`: where the GPU memory went — peak per device with
// its owners and call sites, leaks, churn, what was live at an instant; per
// process of a job's traces (job_loader.h).
#include <iostream>

#include "commands.h"
#include "job_loader.h"
#include "progress_line.h"
#include "trace_loader.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/memory/memory_report.h"

namespace tracesmith::cli {
namespace {

struct MemoryCliOptions {
  RunArgs run;
  analysis::MemoryReportOptions report;
  bool json = false;
  bool strict = false;
  bool quiet = false;
  bool no_steps = false;
};

int RunMemory(const MemoryCliOptions& o) {
  // A malformed --at is refused before the run is opened; one past the
  // trace's end once its range is known.
  if (!o.report.at.empty())
    if (auto d = ParseDuration(o.report.at); !d.ok())
      return ReportError(InvalidArgument("--at " + o.report.at + ": " + d.status().message()));
  auto run = OpenRunSource(o.run, o.strict, "analysing");
  if (!run.ok()) return ReportError(run.status());
  analysis::MemoryReport report;
  ProgressLine line("memory", o.quiet);
  line.Show("reading the allocations of " + run->name());
  analysis::MemoryReportOptions options = o.report;
  options.steps = !o.no_steps;
  if (Status st = ReadRun(
          *run, o.strict, "analysing",
          [&](format::TraceSource& source, format::ReadReport* damage) {
            return analysis::BuildMemoryReport(source, options, &report, damage);
          },
          [&] { line.Done(); });
      !st.ok())
    return ReportError(st);
  report.source = run->name();
  if (o.json)
    analysis::WriteMemoryJson(report, std::cout);
  else
    analysis::WriteMemoryText(report, o.report, std::cout);
  std::cout.flush();
  return std::cout ? kExitOk : ReportError(IoError("writing the report to stdout failed"));
}

}  // namespace

void AddMemoryCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "memory", "Where GPU memory went: peak per device with owners and call sites, leaks, churn");
  auto o = std::make_shared<MemoryCliOptions>();
  AddRunArguments(cmd, &o->run, "The trace to analyse");
  cmd->add_flag("--json", o->json, "Machine-readable JSON instead of the text report");
  cmd->add_option("--at", o->report.at,
                  "Also show what was live at this time, relative to the trace start (e.g. 2.5s)");
  cmd->add_option("--top", o->report.top, "Rows per table")->default_val(10);
  cmd->add_option("--bins", o->report.bins, "Points of the live-bytes summary")->default_val(60);
  cmd->add_flag("--no-steps", o->no_steps,
                "Do not place the peaks in the program's steps (found from the kernels, they "
                "hold the kernels in memory as analyze does)");
  AddStrictFlag(cmd, &o->strict);
  cmd->add_flag("-q,--quiet", o->quiet, "No progress line on a terminal");
  commands.emplace_back(cmd, [o] { return RunMemory(*o); });
}

}  // namespace tracesmith::cli
