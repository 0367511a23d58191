// `tracesmith export FILE -f perfetto|json|sqlite|csv|dot [-o OUT] [--gzip]`:
// converts an SBT trace for Perfetto UI, torch.profiler tools, SQL,
// spreadsheets or Graphviz (the dependency graph). Streams the file: memory
// stays bounded on large traces.
#include <cstdio>

#include "commands.h"
#include "output_rule.h"
#include "trace_loader.h"
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

int RunExport(const ExportCliOptions& o) {
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
  options.dot_node_limit = o.node_limit;
  options.from = o.from;
  options.to = o.to;
  format::ReadReport damage;
  auto stats = exporter::ExportSbtFile(o.input, *format, out, options, &damage);
  if (!stats.ok()) return ReportError(stats.status());
  if (Status st = CheckDamage(o.input, damage, o.strict, "exporting"); !st.ok())
    return ReportError(st);
  if (!o.quiet && *format == exporter::ExportFormat::kDot) {
    std::fprintf(stderr, "tracesmith: wrote %s (%s, at most %zu nodes)\n", out.c_str(),
                 HumanBytes(stats->bytes).c_str(), o.node_limit);
  } else if (!o.quiet) {
    std::fprintf(stderr, "tracesmith: wrote %s (%s, %llu events", out.c_str(),
                 HumanBytes(stats->bytes).c_str(), static_cast<unsigned long long>(stats->events));
    if (stats->flows)
      std::fprintf(stderr, ", %llu flows", static_cast<unsigned long long>(stats->flows));
    if (stats->extra_lanes)
      std::fprintf(stderr, ", %llu extra tracks for overlapping slices",
                   static_cast<unsigned long long>(stats->extra_lanes));
    if (stats->allocations_not_drawn)
      std::fprintf(stderr,
                   ", %llu allocations without a slice (more than 1024 live at once on a "
                   "device; the memory counters include them)",
                   static_cast<unsigned long long>(stats->allocations_not_drawn));
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
                  "Output file (default: input name with .pftrace/.json/.sqlite/.csv/.dot)");
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
