// `tracesmith import FILE -o out.sbt`: converts a torch.profiler (Kineto)
// JSON trace (plain or .gz) to SBT, so analyze, diff and export work on it.
#include <cstdio>

#include "commands.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/import/import.h"

namespace tracesmith::cli {
namespace {

struct ImportCliOptions {
  std::string input, output;
  bool quiet = false;
};

int RunImport(const ImportCliOptions& o) {
  importer::ImportFormat format;
  importer::ImportStats stats;
  auto trace = importer::ImportFile(o.input, &format, &stats);
  if (!trace.ok()) return ReportError(trace.status());
  std::string out = o.output.empty() ? o.input + ".sbt" : o.output;
  Status st = format::WriteTraceFile(*trace, out);
  if (!st.ok()) return ReportError(st);
  if (!o.quiet)
    std::fprintf(stderr, "tracesmith: %s (%s): %llu events imported, %llu skipped -> %s\n",
                 o.input.c_str(), importer::ImportFormatName(format),
                 static_cast<unsigned long long>(stats.events),
                 static_cast<unsigned long long>(stats.skipped), out.c_str());
  return kExitOk;
}

}  // namespace

void AddImportCommand(CLI::App& app, CommandList& commands) {
  auto* cmd = app.add_subcommand("import", "Convert a torch.profiler (Kineto) JSON trace to SBT");
  auto o = std::make_shared<ImportCliOptions>();
  cmd->add_option("file", o->input, "Trace to import (.json or .json.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->output, "Output .sbt (default: FILE.sbt)");
  cmd->add_flag("-q,--quiet", o->quiet, "No summary line on stderr");
  commands.emplace_back(cmd, [o] { return RunImport(*o); });
}

}  // namespace tracesmith::cli
