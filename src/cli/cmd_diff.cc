// `tracesmith diff A B`: what changed between two traces (before/after an
// optimisation), per kernel and per call site, biggest time change first.
#include <iostream>

#include "commands.h"
#include "tracesmith/analysis/diff.h"

namespace tracesmith::cli {
namespace {

struct DiffCliOptions {
  std::string a, b;
  analysis::LoadOptions load;
  size_t top = 20;
  bool json = false;
};

StatusOr<analysis::AnalysisReport> Analyze(const std::string& path,
                                           const analysis::LoadOptions& load) {
  analysis::CompactTrace trace;
  RETURN_IF_ERROR(analysis::LoadCompactTrace(path, load, &trace));
  return analysis::BuildReport(trace, path);
}

int RunDiff(const DiffCliOptions& o) {
  auto a = Analyze(o.a, o.load);
  if (!a.ok()) return ReportError(a.status());
  auto b = Analyze(o.b, o.load);
  if (!b.ok()) return ReportError(b.status());
  analysis::TraceDiff d = analysis::DiffReports(*a, *b);
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
  commands.emplace_back(cmd, [o] { return RunDiff(*o); });
}

}  // namespace tracesmith::cli
