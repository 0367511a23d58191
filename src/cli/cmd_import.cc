// `tracesmith import FILE -o out.sbt`: converts a torch.profiler (Kineto)
// JSON trace (plain or .gz) or an LLVM XRay log (basic or FDR mode; names
// from `--binary`) to SBT, so analyze, diff and export work on it.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "output_rule.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/import/import.h"

namespace tracesmith::cli {
namespace {

struct ImportCliOptions {
  std::string input, output, binary;
  bool quiet = false, strict = false, force = false;
  double max_input_gb = 0;  // 0: the importer's default
};

int RunImport(const ImportCliOptions& o) {
  const std::string out = o.output.empty() ? o.input + ".sbt" : o.output;
  // Checked before the work: never an input, a directory or a device.
  std::vector<std::string> inputs = {o.input};
  if (!o.binary.empty()) inputs.push_back(o.binary);
  if (Status ok = CheckOutputFile(out, inputs, o.force); !ok.ok()) return ReportError(ok);
  importer::ImportFormat format;
  importer::ImportStats stats;
  importer::ImportOptions io;
  io.xray_binary = o.binary;
  io.max_input_bytes = uint64_t(o.max_input_gb * double(uint64_t{1} << 30));
  auto trace = importer::ImportFile(o.input, io, &format, &stats);
  if (!trace.ok()) return ReportError(trace.status());
  for (const std::string& w : stats.warnings)
    std::fprintf(stderr, "tracesmith: warning: %s: %s\n", o.input.c_str(), w.c_str());
  if (!stats.damage.empty()) {
    Status damaged = DataLoss(o.input + ": " + stats.damage);
    if (o.strict) return ReportError(damaged);
    std::fprintf(stderr, "tracesmith: warning: %s; imported what precedes it\n",
                 damaged.message().c_str());
  }
  if (stats.unmatched_entries || stats.unmatched_exits)
    std::fprintf(stderr,
                 "tracesmith: warning: %s: %llu function entries without an exit, %llu exits "
                 "without an entry\n",
                 o.input.c_str(), static_cast<unsigned long long>(stats.unmatched_entries),
                 static_cast<unsigned long long>(stats.unmatched_exits));
  // Written beside `out` and renamed over it when complete.
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

void AddImportCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "import", "Convert a torch.profiler (Kineto) JSON trace or an LLVM XRay log to SBT");
  auto o = std::make_shared<ImportCliOptions>();
  cmd->add_option("file", o->input,
                  "Trace to import (.json or .json.gz; XRay log in basic or FDR mode)")
      ->required()
      ->check(ExistingFile);
  cmd->add_option("-b,--binary,--instr-map", o->binary,
                  "XRay: the instrumented binary (its xray_instr_map and symbols name the "
                  "functions; without it they are function#<id>)")
      ->check(ExistingFile);
  cmd->add_flag("--strict", o->strict,
                "Fail (exit 1, write nothing) when the input is cut or corrupt part-way");
  cmd->add_option("--max-input-gb", o->max_input_gb,
                  "Most GiB the input may decompress to (default: 100x its size on disk, at "
                  "least 1; it is held in memory while parsing)")
      ->check(PositiveNumber);
  cmd->add_option("-o,--output", o->output, "Output .sbt (default: FILE.sbt)");
  cmd->add_flag("-q,--quiet", o->quiet, "No summary line on stderr");
  AddForceFlag(cmd, &o->force);
  commands.emplace_back(cmd, [o] { return RunImport(*o); });
}

}  // namespace tracesmith::cli
