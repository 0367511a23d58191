// `tracesmith symbolize FILE`: resolves the native frames of a trace to
// function names (demangled) and file:line, offline, from the modules'
// paths and build-ids recorded at capture, and gives sampled GPU
// instructions their SASS text from the cubins a --pc-sampling capture left
// beside it (FILE.cubins/, or --cubins DIR; nvdisasm from the CUDA toolkit).
// Rewrites FILE (or writes -o OUT).
#include <sys/stat.h>

#include <cstdio>

#include "commands.h"
#include "output_rule.h"
#include "trace_loader.h"
#include "tracesmith/format/run_names.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/symbolize/sass.h"
#include "tracesmith/symbolize/symbolizer.h"

namespace tracesmith::cli {
namespace {

struct SymbolizeArgs {
  std::string path;
  std::string output;
  std::vector<std::string> search_dirs;
  std::string cubins;        // "" -> FILE.cubins
  bool force = false;        // replace an existing -o OUT
  bool resymbolize = false;  // frames that already have names too
  bool strict = false;
};

int RunSymbolize(const SymbolizeArgs& args) {
  if (!args.output.empty()) {  // rewriting FILE in place is what symbolize is for
    const std::string inputs[] = {args.path};
    if (Status ok = CheckOutputFile(args.output, inputs, args.force); !ok.ok())
      return ReportError(ok);
  }
  format::ReadReport report;
  auto trace = format::ReadTraceFile(args.path, &report);
  if (!trace.ok()) return ReportError(trace.status());
  // Replay payloads (--replay-capture) are raw chunks that the rewrite does
  // not carry over: in place they would be lost for good.
  if (args.output.empty() && HasReplayPayloads(args.path))
    return ReportError(FailedPrecondition(
        args.path +
        " holds replay payloads (profile --replay-capture), which symbolize does not "
        "copy: write the symbolized trace elsewhere with -o OUT"));
  // Rewritten in place, a damaged trace would lose its damaged parts for good.
  if (args.output.empty() && !report.clean())
    return ReportError(FailedPrecondition(
        report.DamageStatus(args.path).message() +
        "\nsymbolize would rewrite it without them: write the symbolized trace elsewhere with "
        "-o OUT"));
  if (Status damage = CheckDamage(args.path, report, args.strict, "symbolizing"); !damage.ok())
    return ReportError(damage);
  symbolize::SymbolizeOptions options;
  options.search_dirs = args.search_dirs;
  options.overwrite = args.resymbolize;
  auto stats = symbolize::Symbolize(&*trace, options);
  if (!stats.ok()) return ReportError(stats.status());
  // SASS for the sampled instructions, when the capture's cubins are here.
  const std::string cubins = args.cubins.empty() ? format::CubinDirOf(args.path) : args.cubins;
  symbolize::SassStats sass_stats;
  struct stat dir;
  if (stat(cubins.c_str(), &dir) == 0 && S_ISDIR(dir.st_mode)) {
    auto sass = symbolize::AddSass(&*trace, cubins);
    if (!sass.ok()) return ReportError(sass.status());
    sass_stats = *sass;
  } else if (!args.cubins.empty()) {
    return ReportError(NotFound(args.cubins +
                                ": no such directory (--cubins: the .cubins "
                                "directory a --pc-sampling capture left beside its trace)"));
  }

  // WriteTraceFile writes beside the destination and renames when complete
  // (base/atomic_file.h), so an interrupted run never leaves a half-written
  // trace in place of the original. Rewriting FILE itself is what symbolize
  // does by default: the trace is in memory by now, so that is safe.
  const std::string out = args.output.empty() ? args.path : args.output;
  Status written = format::WriteTraceFile(*trace, out);
  if (!written.ok()) return ReportError(written);
  if (sass_stats.instructions)
    std::printf(
        "SASS of %llu of %llu sampled instructions from %llu modules (%s)%s\n",
        static_cast<unsigned long long>(sass_stats.with_text),
        static_cast<unsigned long long>(sass_stats.instructions),
        static_cast<unsigned long long>(sass_stats.cubins), sass_stats.nvdisasm.c_str(),
        sass_stats.cubins_missing + sass_stats.cubins_failed
            ? StrFormat("; %llu modules missing from %s, %llu failed%s%s",
                        static_cast<unsigned long long>(sass_stats.cubins_missing), cubins.c_str(),
                        static_cast<unsigned long long>(sass_stats.cubins_failed),
                        sass_stats.first_error.empty() ? "" : ": ", sass_stats.first_error.c_str())
                  .c_str()
            : "");
  const auto& s = *stats;
  std::printf("Symbolized %llu of %llu native frames (%llu with file:line) -> %s\n",
              static_cast<unsigned long long>(s.with_function),
              static_cast<unsigned long long>(s.native_frames),
              static_cast<unsigned long long>(s.with_line), out.c_str());
  if (s.modules_missing || s.build_id_mismatch) {
    std::printf(
        "Modules not found: %llu, other build (build-id differs): %llu. "
        "Pass --search-dir DIR with copies of the target's libraries.\n",
        static_cast<unsigned long long>(s.modules_missing),
        static_cast<unsigned long long>(s.build_id_mismatch));
  }
  return kExitOk;
}

}  // namespace

void AddSymbolizeCommand(Cmd& app, CommandList& commands) {
  auto args = std::make_shared<SymbolizeArgs>();
  auto* sub = app.add_subcommand(
      "symbolize", "Resolve native stack frames to functions and file:line (offline, by build-id)");
  sub->add_option("file", args->path, "Trace file (.sbt)")->required();
  sub->add_option("-o,--output", args->output, "Write here instead of rewriting FILE");
  sub->add_option("--search-dir", args->search_dirs,
                  "Also look for modules (by file name, same build-id) in this directory");
  sub->add_option("--cubins", args->cubins,
                  "The cubins of a --pc-sampling capture, for the SASS of its sampled instructions "
                  "(default: FILE.cubins when it exists; needs nvdisasm from the CUDA toolkit)");
  sub->add_flag("--resymbolize", args->resymbolize, "Re-symbolize frames that already have names");
  AddForceFlag(sub, &args->force);
  AddStrictFlag(sub, &args->strict);
  commands.emplace_back(sub, [args] { return RunSymbolize(*args); });
}

}  // namespace tracesmith::cli
