// `tracesmith export FILE -f perfetto|json|sqlite|csv|dot [-o OUT] [--gzip]`:
// converts an SBT trace for Perfetto UI, torch.profiler tools, SQL,
// spreadsheets or Graphviz (the dependency graph). Streams the file: memory
// stays bounded on large traces.
#include <cstdio>
#include <fstream>

#include "commands.h"
#include "output_rule.h"
#include "trace_loader.h"
#include "tracesmith/analysis/dependency_graph.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"

namespace tracesmith::cli {
namespace {

struct ExportCliOptions {
  std::string input;
  std::string format = "perfetto";
  std::string output;
  bool force = false;
  bool gzip = false;
  bool quiet = false;
  bool strict = false;
  size_t node_limit = 500;  // dot
  std::string from, to;     // dot
};

// Graphviz of the dependency graph (analysis/dependency_graph.h), critical
// path in red; big traces are cut to the earliest node_limit nodes of the window.
int RunDotExport(const ExportCliOptions& o) {
  std::string out = o.output;
  if (out.empty()) {
    out = o.input;
    if (out.size() > 4 && out.compare(out.size() - 4, 4, ".sbt") == 0) out.resize(out.size() - 4);
    out += ".dot";
  }
  // Checked before the work: never the input itself, a directory or a device.
  const std::string inputs[] = {o.input};
  if (Status ok = CheckOutputFile(out, inputs, o.force); !ok.ok()) return ReportError(ok);
  analysis::CompactTrace trace;
  analysis::LoadOptions load;
  load.from = o.from;
  load.to = o.to;
  format::ReadReport damage;
  Status st = analysis::LoadCompactTrace(o.input, load, &trace, &damage);
  if (st.ok()) st = CheckDamage(o.input, damage, o.strict, "exporting");
  if (!st.ok()) return ReportError(st);
  // Written beside `out` and renamed over it when complete (base/atomic_file.h).
  auto atomic = AtomicFile::Create(out, inputs);
  if (!atomic.ok()) return ReportError(atomic.status());
  AtomicFile& dest = **atomic;
  if (st = dest.CloseFd(); !st.ok()) return ReportError(st);
  std::ofstream file(dest.temp_path(), std::ios::trunc);
  if (!file) return ReportError(IoError(dest.temp_path() + ": cannot open for writing"));
  analysis::DotOptions dot;
  dot.node_limit = o.node_limit;
  st = analysis::WriteDot(trace, dot, file);
  file.close();
  if (st.ok() && !file) st = IoError(out + ": write failed");
  if (st.ok()) st = dest.Commit();
  if (!st.ok()) return ReportError(st);  // `dest` removes the temporary file
  if (!o.quiet)
    std::fprintf(stderr, "tracesmith: wrote %s (at most %zu nodes)\n", out.c_str(), o.node_limit);
  return kExitOk;
}

int RunExport(const ExportCliOptions& o) {
  if (o.format == "dot") return RunDotExport(o);
  auto format = exporter::ParseExportFormat(o.format);
  if (!format.ok()) return ReportError(format.status());
  if (o.gzip && *format != exporter::ExportFormat::kJson)
    return ReportError(InvalidArgument("--gzip applies to -f json only"));
  std::string out = o.output;
  if (out.empty()) {
    out = o.input;
    if (out.size() > 4 && out.compare(out.size() - 4, 4, ".sbt") == 0) out.resize(out.size() - 4);
    out += exporter::ExportFormatExtension(*format, o.gzip);
  }
  // Checked before the work: never the input, a directory or a device, and
  // an existing file only with --force.
  const std::string inputs[] = {o.input};
  if (Status ok = CheckOutputFile(out, inputs, o.force); !ok.ok()) return ReportError(ok);
  exporter::ExportOptions options;
  options.gzip = o.gzip;
  options.refuse_damaged_input = o.strict;  // checked before anything is written
  format::ReadReport damage;
  auto stats = exporter::ExportSbtFile(o.input, *format, out, options, &damage);
  if (!stats.ok()) return ReportError(stats.status());
  if (Status st = CheckDamage(o.input, damage, o.strict, "exporting"); !st.ok())
    return ReportError(st);
  if (!o.quiet) {
    std::fprintf(stderr, "tracesmith: wrote %s (%s, %llu events", out.c_str(),
                 HumanBytes(stats->bytes).c_str(), static_cast<unsigned long long>(stats->events));
    if (stats->flows)
      std::fprintf(stderr, ", %llu flows", static_cast<unsigned long long>(stats->flows));
    if (stats->extra_lanes)
      std::fprintf(stderr, ", %llu extra tracks for overlapping slices",
                   static_cast<unsigned long long>(stats->extra_lanes));
    std::fprintf(stderr, ")\n");
  }
  return kExitOk;
}

}  // namespace

void AddExportCommand(CLI::App& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "export",
      "Convert a trace to Perfetto, Chrome/Kineto JSON, nsys-style SQLite, CSV or Graphviz DOT");
  auto o = std::make_shared<ExportCliOptions>();
  cmd->add_option("file", o->input, "Trace file (.sbt)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-f,--format", o->format, "perfetto | json | sqlite | csv | dot")
      ->default_val("perfetto");
  cmd->add_option("-o,--output", o->output,
                  "Output file (default: input name with .pftrace/.json/.sqlite/.csv)");
  cmd->add_flag("--gzip", o->gzip, "json: write gzip-compressed (.json.gz)");
  cmd->add_flag("-q,--quiet", o->quiet, "No summary line on stderr");
  AddForceFlag(cmd, &o->force);
  cmd->add_option("--node-limit", o->node_limit, "dot: at most N nodes (the earliest)")
      ->default_val(500);
  cmd->add_option("--from", o->from, "dot: window start, relative to the trace start (e.g. 2ms)");
  cmd->add_option("--to", o->to, "dot: window end, relative to the trace start");
  AddStrictFlag(cmd, &o->strict);
  commands.emplace_back(cmd, [o] { return RunExport(*o); });
}

}  // namespace tracesmith::cli
