// `tracesmith symbolize FILE`: resolves the native frames of a trace to
// function names (demangled) and file:line, offline, from the modules'
// paths and build-ids recorded at capture, and gives sampled GPU
// instructions their SASS text from the cubins a --pc-sampling capture left
// beside it (FILE.cubins/, or --cubins DIR; nvdisasm from the CUDA toolkit).
// Rewrites FILE (or writes -o OUT). `--capture-end` does instead what
// `profile` does to each trace when its program ends (symbolize::FinishCapture):
// an in-process capture runs it at its stop (session/finish_process.h).
#include <sys/stat.h>

#include <cstdio>

#include "commands.h"
#include "output_rule.h"
#include "trace_loader.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/job_file_names.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/symbolize/finish_capture.h"
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
  std::string time_limit;    // "" none
  bool capture_end = false;  // as `profile` at the end of a capture
  bool no_names = false;     // --capture-end: only the SASS text
  bool quiet = false;
  std::string torch_trace;  // torch's structured log: torch.compile's model lines
};

// --torch-trace DIR: the compiled graphs of torch's structured log.
StatusOr<std::vector<symbolize::CompiledGraph>> CompiledGraphs(const std::string& dir) {
  if (dir.empty()) return std::vector<symbolize::CompiledGraph>{};
  auto g = symbolize::ReadTorchTrace(dir);
  if (!g.ok())
    return InvalidArgument("--torch-trace: " + g.status().message() +
                           " (the directory TORCH_TRACE named for the program)");
  return g;
}

// `--capture-end`: FinishCapture on FILE in place, as `profile` does when its
// program ends; a trace it cannot rewrite is left as it is (a line says so).
int RunCaptureEnd(const SymbolizeArgs& args, double time_limit_s) {
  if (!args.output.empty() || !args.search_dirs.empty() || !args.cubins.empty() ||
      args.resymbolize || args.force)
    return ReportError(
        InvalidArgument("--capture-end rewrites FILE in place as `profile` does: it takes none "
                        "of -o, --search-dir, --cubins, --resymbolize, --force"));
  auto graphs = CompiledGraphs(args.torch_trace);
  if (!graphs.ok()) return ReportError(graphs.status());
  symbolize::FinishOptions options;
  options.names = !args.no_names;
  options.time_limit_s = time_limit_s;
  options.compiled_graphs = &*graphs;
  const symbolize::FinishReport done = symbolize::FinishCapture(args.path, options);
  if (!args.quiet)
    for (const std::string& line : done.lines)
      std::fprintf(stderr, "tracesmith: %s\n", line.c_str());
  return kExitOk;
}

int RunSymbolize(const SymbolizeArgs& args) {
  double time_limit_s = 0;
  if (!args.time_limit.empty()) {
    auto ns = ParseDuration(args.time_limit);
    if (!ns.ok()) return ReportError(InvalidArgument("--time-limit: " + ns.status().message()));
    time_limit_s = double(*ns) / 1e9;
  }
  if (args.no_names && !args.capture_end)
    return ReportError(InvalidArgument("--no-names goes with --capture-end"));
  if (args.capture_end) return RunCaptureEnd(args, time_limit_s);
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
  if (args.output.empty() && format::HasReplayPayloads(args.path))
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
  options.time_limit_s = time_limit_s;
  auto graphs = CompiledGraphs(args.torch_trace);
  if (!graphs.ok()) return ReportError(graphs.status());
  auto stats = symbolize::Symbolize(&*trace, options);
  if (!stats.ok()) return ReportError(stats.status());
  const symbolize::CompiledLinesStats compiled = symbolize::AddCompiledLines(&*trace, *graphs);
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
  if (!args.torch_trace.empty())
    std::printf(
        "torch.compile: model lines for %llu and graph nodes for %llu of %llu generated "
        "lines\n",
        static_cast<unsigned long long>(compiled.with_model),
        static_cast<unsigned long long>(compiled.with_nodes),
        static_cast<unsigned long long>(compiled.generated_lines));
  const auto& s = *stats;
  std::printf("Symbolized %llu of %llu native frames (%llu with file:line) -> %s\n",
              static_cast<unsigned long long>(s.with_function),
              static_cast<unsigned long long>(s.native_frames),
              static_cast<unsigned long long>(s.with_line), out.c_str());
  if (s.timed_out)
    std::printf("Time limit reached: %llu native frames left unnamed (run again to name them).\n",
                static_cast<unsigned long long>(s.frames_left));
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
  sub->add_option(
      "--time-limit", args->time_limit,
      "Stop naming frames after this long (e.g. 120s; frames left stay unnamed, a later "
      "run names them); with --capture-end also the SASS");
  sub->add_flag("--capture-end", args->capture_end,
                "Do what `profile` does to a trace when its program ends (in-process captures run "
                "this at their stop): name the frames and add the SASS in place; a trace it "
                "cannot rewrite (damaged, over 1 GiB, replay payloads) is left as it is, exit 0");
  sub->add_flag("--no-names", args->no_names, "With --capture-end: only the SASS text");
  sub->add_option("--torch-trace", args->torch_trace,
                  "torch.compile: the directory TORCH_TRACE named for the program (run with "
                  "INDUCTOR_PROVENANCE=1): launches through Inductor's generated code are then "
                  "named by the model's lines (`profile` does this by itself)");
  sub->add_flag("-q,--quiet", args->quiet, "With --capture-end: print nothing");
  AddForceFlag(sub, &args->force);
  AddStrictFlag(sub, &args->strict);
  commands.emplace_back(sub, [args] { return RunSymbolize(*args); });
}

}  // namespace tracesmith::cli
