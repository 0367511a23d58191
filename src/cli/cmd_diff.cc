// `tracesmith diff A B`: what changed between two traces (before/after an
// optimisation), per kernel and per call site, biggest time change first.
#include <iostream>

#include "commands.h"
#include "trace_loader.h"
#include "tracesmith/analysis/diff.h"

namespace tracesmith::cli {
namespace {

struct DiffCliOptions {
  std::string a, b;
  analysis::LoadOptions load;
  size_t top = 20;
  bool json = false;
  bool strict = false;
};

// Analyses one side. A damaged file is an error with --strict; else a warning
// on stderr, and one in the diff itself (`warnings`): the numbers of that
// side cover only its readable part, so a change may be damage, not a change.
StatusOr<analysis::AnalysisReport> Analyze(const std::string& side, const std::string& path,
                                           const DiffCliOptions& o,
                                           std::vector<std::string>* warnings) {
  analysis::CompactTrace trace;
  format::ReadReport damage;
  RETURN_IF_ERROR(analysis::LoadCompactTrace(path, o.load, &trace, &damage));
  RETURN_IF_ERROR(CheckDamage(path, damage, o.strict, "comparing"));
  if (!damage.clean())
    warnings->push_back(side + ": " + damage.Headline(path) +
                        "; this comparison covers only its readable part");
  return analysis::BuildReport(trace, path);
}

int RunDiff(const DiffCliOptions& o) {
  std::vector<std::string> warnings;
  auto a = Analyze("A", o.a, o, &warnings);
  if (!a.ok()) return ReportError(a.status());
  auto b = Analyze("B", o.b, o, &warnings);
  if (!b.ok()) return ReportError(b.status());
  analysis::TraceDiff d = analysis::DiffReports(*a, *b);
  d.warnings = std::move(warnings);
  if (o.json) {
    analysis::WriteJsonDiff(d, std::cout);
  } else {
    analysis::WriteTextDiff(d, o.top, std::cout);
  }
  return kExitOk;
}

}  // namespace

void AddDiffCommand(CLI::App& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "diff", "Per-kernel and per-call-site count and GPU time differences between two traces");
  auto o = std::make_shared<DiffCliOptions>();
  cmd->add_option("a", o->a, "Baseline trace (before)")->required();
  cmd->add_option("b", o->b, "Trace to compare (after)")->required();
  cmd->add_option("--top", o->top, "Rows per table")->default_val(20);
  cmd->add_flag("--json", o->json, "Machine-readable JSON");
  cmd->add_option("--nvtx", o->load.nvtx, "Compare only work issued inside these NVTX ranges");
  AddStrictFlag(cmd, &o->strict);
  commands.emplace_back(cmd, [o] { return RunDiff(*o); });
}

}  // namespace tracesmith::cli
