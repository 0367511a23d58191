// `tracesmith report RUN [-o report.html]`: one self-contained HTML page —
// header, findings, timeline overview, top kernels and call sites,
// utilization and idle causes, steps, memory, copy bandwidth and the GPU-time
// flame graph (report/html_report.h; docs/report.md). RUN is one trace or the
// traces of a job (job_loader.h), merged: the timeline then has one group per
// rank.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "commands.h"
#include "job_loader.h"
#include "output_rule.h"
#include "progress_line.h"
#include "trace_loader.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/report/html_report.h"

namespace tracesmith::cli {
namespace {

struct ReportCliOptions {
  RunArgs run;
  std::string output;
  std::string weight = "gpu-time";
  uint32_t bins = 2000;
  analysis::LoadOptions load;
  bool force = false;
  bool quiet = false;
  bool strict = false;
};

// The output's default name: the first trace named, .sbt (or a directory's
// trailing slash) taken off, then ".html".
std::string DefaultOutput(const std::string& name) {
  std::string out = name;
  while (out.size() > 1 && out.ends_with('/')) out.pop_back();
  if (out.size() > 4 && out.ends_with(".sbt")) out.resize(out.size() - 4);
  return out + ".html";
}

int RunReport(const ReportCliOptions& o) {
  auto weight = report::ParseFlameWeight(o.weight);
  if (!weight.ok()) return ReportError(weight.status());
  const std::string out = o.output.empty() ? DefaultOutput(o.run.names[0]) : o.output;
  // Checked before the work: never an input, a directory or a device, and an
  // existing file only with --force.
  auto files = cluster::ResolveRun(o.run.names, o.run.single);
  if (!files.ok()) return ReportError(files.status());
  if (Status ok = CheckOutputFile(out, files->files, o.force); !ok.ok()) return ReportError(ok);
  auto run = OpenRunSource(o.run, o.strict, "reporting on");
  if (!run.ok()) return ReportError(run.status());

  report::HtmlReportOptions options;
  options.load = o.load;
  options.timeline_bins = o.bins;
  options.flame_weight = *weight;
  options.run_files = run->files();
  for (const std::string& name : o.run.names)
    options.input_names += (options.input_names.empty() ? "" : " ") + name;
  ProgressLine line("report", o.quiet);
  options.progress = [&](int step, int steps, std::string_view what) {
    line.Show(StrFormat("[%d/%d] %.*s", step, steps, int(what.size()), what.data()));
  };
  report::HtmlReportSummary summary;
  if (Status st = ReadRun(
          *run, o.strict, "reporting on",
          [&](format::TraceSource& source, format::ReadReport* damage) {
            ASSIGN_OR_RETURN(summary,
                             report::WriteHtmlReport(source, run->name(), out, options, damage));
            return OkStatus();
          },
          [&] { line.Done(); });
      !st.ok())
    return ReportError(st);
  if (!o.quiet) {
    const report::HtmlReportSummary& s = summary;
    std::fprintf(stderr,
                 "tracesmith: wrote %s (%s): %llu kernels, %zu stream%s in %zu bins, %zu findings, "
                 "%zu steps, flame graph of %zu stacks (%zu boxes), %s; open it in a browser\n",
                 out.c_str(), HumanBytes(s.bytes).c_str(),
                 static_cast<unsigned long long>(s.kernels), s.lanes, s.lanes == 1 ? "" : "s",
                 s.bins, s.findings, s.steps, s.flame_stacks, s.flame_nodes,
                 s.memory_series
                     ? StrFormat("memory of %zu device/space series", s.memory_series).c_str()
                     : "no allocations");
  }
  return kExitOk;
}

}  // namespace

void AddReportCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "report",
      "Write one self-contained HTML page: findings, timeline overview, top kernels, call "
      "sites, utilization, steps, memory, copies and a GPU-time flame graph");
  auto o = std::make_shared<ReportCliOptions>();
  AddRunArguments(cmd, &o->run, "The trace to report on");
  cmd->add_option("-o,--output", o->output, "Output file (default: input name with .html)");
  cmd->add_option("--weight", o->weight,
                  "Flame graph weight: gpu-time (GPU ns of the ops each stack launched) or "
                  "launches")
      ->default_val("gpu-time");
  cmd->add_option("--bins", o->bins, "Timeline bins per stream (fewer with many streams)")
      ->default_val(2000)
      ->check(Range(1u, 100000u));
  AddWindowOptions(cmd, &o->load);  // the window `analyze` reports on
  cmd->add_flag("-q,--quiet", o->quiet, "No progress and no summary line");
  AddForceFlag(cmd, &o->force);
  AddStrictFlag(cmd, &o->strict);
  commands.emplace_back(cmd, [o] { return RunReport(*o); });
}

}  // namespace tracesmith::cli
