// `tracesmith export RUN -f perfetto|json|sqlite|csv|dot|folded [-o OUT] [--gzip]`:
// converts an SBT trace for Perfetto UI, torch.profiler tools, SQL,
// spreadsheets or Graphviz (the dependency graph). Streams the file: memory
// stays bounded on large traces. RUN may be a job's traces (job_loader.h):
// merged into one output, or with -f json and a directory output
// (`-o DIR/`, --per-rank) one DIR/rank-<N>.json per process, as HTA reads a
// multi-rank job (export/rank_directory.h).
#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "job_loader.h"
#include "output_rule.h"
#include "progress_line.h"
#include "trace_loader.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/export/job_export.h"
#include "tracesmith/export/rank_directory.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/report/flame.h"

namespace tracesmith::cli {
namespace {

struct ExportCliOptions {
  RunArgs run;
  bool per_rank = false;  // json: one file per process in a directory
  std::string format = "perfetto";
  std::string output;
  bool force = false;
  bool gzip = false;
  bool quiet = false;
  bool strict = false;
  size_t node_limit = 500;          // dot
  std::string from, to;             // dot
  std::string weight = "gpu-time";  // folded
};

// The output's default name: the first trace named, .sbt (or a
// directory's trailing slash) taken off, then `suffix`.
std::string DefaultOutput(const std::string& name, const std::string& suffix) {
  std::string out = name;
  while (out.size() > 1 && out.ends_with('/')) out.pop_back();
  if (out.size() > 4 && out.ends_with(".sbt")) out.resize(out.size() - 4);
  return out + suffix;
}

// -f json into a directory: DIR/rank-<N>.json per process.
int RunExportPerRank(const ExportCliOptions& o, const exporter::ExportOptions& options) {
  auto run = cluster::ResolveRun(o.run.names, o.run.single);
  if (!run.ok()) return ReportError(run.status());
  std::string dir = o.output.empty() ? DefaultOutput(o.run.names[0], "-ranks") : o.output;
  while (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
  auto result = exporter::ExportKinetoRankDirectory(run->files, dir, options, o.force);
  if (!result.ok()) return ReportError(result.status());
  for (size_t i = 0; i < run->files.size(); ++i)
    if (Status st = CheckDamage(run->files[i], result->damage[i], o.strict, "exporting"); !st.ok())
      return ReportError(st);
  for (const std::string& note : result->notes)
    std::fprintf(stderr, "tracesmith: note: %s\n", note.c_str());
  if (!o.quiet) {
    uint64_t bytes = 0, events = 0;
    for (const exporter::RankFile& f : result->files) bytes += f.bytes, events += f.events;
    const auto& files = result->files;
    std::fprintf(stderr, "tracesmith: wrote %s/: %zu file%s (rank-%d%s%s), %s, %llu events\n",
                 dir.c_str(), files.size(), files.size() == 1 ? "" : "s", files.front().rank,
                 files.size() > 1 ? StrFormat(" .. rank-%d", files.back().rank).c_str() : "",
                 o.gzip ? ".json.gz" : ".json", HumanBytes(bytes).c_str(),
                 static_cast<unsigned long long>(events));
  }
  return kExitOk;
}

// A job (several processes) to Perfetto: one process per rank on the job's
// clock, flows across each matched collective (export/job_export.h). Damaged
// inputs: the usual warning, or with --strict the error before anything is
// written.
int RunExportJobPerfetto(const ExportCliOptions& o, const std::vector<std::string>& files,
                         const exporter::RunProcessScan& scan, const std::string& out) {
  for (const auto& [path, report] : scan.damage)
    if (Status st = CheckDamage(path, report, o.strict, "exporting"); !st.ok())
      return ReportError(st);
  ProgressLine line("export", o.quiet);
  line.Show("writing " + out + " (one rank at a time)");
  auto stats = exporter::ExportJobPerfetto(files, out);
  line.Done();
  if (!stats.ok()) return ReportError(stats.status());
  for (const std::string& w : stats->warnings)
    std::fprintf(stderr, "tracesmith: warning: %s\n", w.c_str());
  if (!o.quiet)
    for (const std::string& l : stats->left_out)
      std::fprintf(stderr, "tracesmith: left out %s\n", l.c_str());
  if (!o.quiet)
    std::fprintf(stderr,
                 "tracesmith: wrote %s (%s, %u ranks on one clock, %llu slices, %llu collective "
                 "flows)\n",
                 out.c_str(), HumanBytes(stats->bytes).c_str(), stats->ranks,
                 static_cast<unsigned long long>(stats->slices),
                 static_cast<unsigned long long>(stats->flows));
  return kExitOk;
}

// -f folded: the flame graph's data (report/flame.h), weighted by GPU time
// or launches.
int RunExportFolded(const ExportCliOptions& o, cluster::OpenedRun& run, const std::string& out) {
  auto weight = report::ParseFlameWeight(o.weight);
  if (!weight.ok()) return ReportError(weight.status());
  report::FoldedFileStats stats;
  if (Status st = ReadRun(run, o.strict, "exporting",
                          [&](format::TraceSource& source, format::ReadReport* damage) {
                            ASSIGN_OR_RETURN(stats, report::WriteFoldedFile(source, out, *weight,
                                                                            o.strict, damage));
                            return OkStatus();
                          });
      !st.ok())
    return ReportError(st);
  if (!o.quiet)
    std::fprintf(
        stderr, "tracesmith: wrote %s (%s, %llu stacks, %s over %llu GPU ops)\n", out.c_str(),
        HumanBytes(stats.bytes).c_str(), static_cast<unsigned long long>(stats.lines),
        *weight == report::FlameWeight::kGpuTime
            ? (HumanDuration(stats.total) + " of GPU time").c_str()
            : StrFormat("%llu launches", static_cast<unsigned long long>(stats.total)).c_str(),
        static_cast<unsigned long long>(stats.ops));
  return kExitOk;
}

int RunExport(const ExportCliOptions& o) {
  auto format = exporter::ParseExportFormat(o.format);
  if (!format.ok()) return ReportError(format.status());
  if (o.gzip && *format != exporter::ExportFormat::kJson)
    return ReportError(InvalidArgument("--gzip applies to -f json only"));
  if (o.weight != "gpu-time" && *format != exporter::ExportFormat::kFolded)
    return ReportError(InvalidArgument("--weight applies to -f folded only"));
  exporter::ExportOptions options;
  options.gzip = o.gzip;
  options.refuse_damaged_input = o.strict;  // checked before anything is written
  options.dot_node_limit = o.node_limit;
  options.from = o.from;
  options.to = o.to;
  // A directory named as one ("DIR/"): an existing directory named without
  // the slash is refused below like any output that is not a file.
  if (o.per_rank || (o.output.ends_with('/') && *format == exporter::ExportFormat::kJson)) {
    if (*format != exporter::ExportFormat::kJson)
      return ReportError(InvalidArgument("--per-rank applies to -f json (kineto) only"));
    return RunExportPerRank(o, options);
  }
  std::string out = o.output;
  if (out.empty())
    out = DefaultOutput(o.run.names[0], exporter::ExportFormatExtension(*format, o.gzip));
  // Checked before the work: never an input, a directory or a device, and
  // an existing file only with --force.
  auto files = cluster::ResolveRun(o.run.names, o.run.single);
  if (!files.ok()) return ReportError(files.status());
  if (Status ok = CheckOutputFile(out, files->files, o.force); !ok.ok()) return ReportError(ok);
  if (*format == exporter::ExportFormat::kPerfetto) {
    const exporter::RunProcessScan scan = exporter::ScanRunProcesses(files->files);
    if (exporter::ExportsAsJob(*format, scan))
      return RunExportJobPerfetto(o, files->files, scan, out);
  }
  // Several files are read merged on the fly, their chunks interleaved by
  // start time (cluster/run_source.h): the export's time-ordering window
  // holds a few chunks per input, as for the run merged into one file.
  auto run = OpenRunSource(o.run, o.strict, "exporting");
  if (!run.ok()) return ReportError(run.status());
  if (*format == exporter::ExportFormat::kFolded) return RunExportFolded(o, *run, out);
  ProgressLine line("export", o.quiet);
  line.Show("writing " + out);
  exporter::ExportStats stats;
  if (Status st = ReadRun(
          *run, o.strict, "exporting",
          [&](format::TraceSource& source, format::ReadReport* damage) {
            ASSIGN_OR_RETURN(stats, exporter::ExportSource(source, *format, out, options, damage));
            return OkStatus();
          },
          [&] { line.Done(); });
      !st.ok())
    return ReportError(st);
  if (!o.quiet && *format == exporter::ExportFormat::kDot) {
    std::fprintf(stderr, "tracesmith: wrote %s (%s, at most %zu nodes)\n", out.c_str(),
                 HumanBytes(stats.bytes).c_str(), o.node_limit);
  } else if (!o.quiet) {
    std::fprintf(stderr, "tracesmith: wrote %s (%s, %llu events", out.c_str(),
                 HumanBytes(stats.bytes).c_str(), static_cast<unsigned long long>(stats.events));
    if (stats.flows)
      std::fprintf(stderr, ", %llu flows", static_cast<unsigned long long>(stats.flows));
    if (stats.extra_lanes)
      std::fprintf(stderr, ", %llu extra tracks for overlapping slices",
                   static_cast<unsigned long long>(stats.extra_lanes));
    if (stats.allocations_not_drawn)
      std::fprintf(stderr,
                   ", %llu allocations without a slice (more than 1024 live at once on a "
                   "device; the memory counters include them)",
                   static_cast<unsigned long long>(stats.allocations_not_drawn));
    std::fprintf(stderr, ")\n");
  }
  return kExitOk;
}

}  // namespace

void AddExportCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand("export",
                                 "Convert a trace to Perfetto, Chrome/Kineto JSON, nsys-style "
                                 "SQLite, CSV, Graphviz DOT or folded flame-graph stacks");
  auto o = std::make_shared<ExportCliOptions>();
  AddRunArguments(cmd, &o->run, "The trace to export");
  cmd->add_option("-f,--format", o->format,
                  "perfetto | json (kineto: torch.profiler's schema) | sqlite | csv | dot | folded "
                  "(flame-graph stacks for flamegraph.pl, inferno, speedscope)")
      ->default_val("perfetto");
  cmd->add_option(
      "-o,--output", o->output,
      "Output file (default: input name with .pftrace/.json/.sqlite/.csv/.dot/.folded); "
      "with "
      "-f json, a directory named DIR/ gets one rank-<N>.json per process "
      "(--per-rank)");
  cmd->add_flag("--per-rank", o->per_rank,
                "json: one DIR/rank-<N>.json per process with its distributedInfo, the layout "
                "HTA reads a multi-rank job from (default DIR: <input>-ranks)");
  cmd->add_flag("--gzip", o->gzip, "json: write gzip-compressed (.json.gz)");
  cmd->add_flag("-q,--quiet", o->quiet, "No summary line on stderr");
  AddForceFlag(cmd, &o->force);
  cmd->add_option("--weight", o->weight,
                  "folded: gpu-time (GPU ns of the ops each stack launched) or launches")
      ->default_val("gpu-time");
  cmd->add_option("--node-limit", o->node_limit, "dot: at most N nodes (the earliest)")
      ->default_val(500);
  cmd->add_option("--from", o->from, "dot: window start, relative to the trace start (e.g. 2ms)");
  cmd->add_option("--to", o->to, "dot: window end, relative to the trace start");
  AddStrictFlag(cmd, &o->strict);
  commands.emplace_back(cmd, [o] { return RunExport(*o); });
}

}  // namespace tracesmith::cli
