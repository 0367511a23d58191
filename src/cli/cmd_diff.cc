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

int RunDiff(const DiffCliOptions& o) {
  format::ReadReport damage[2];
  auto d = analysis::DiffTraceFiles(o.a, o.b, o.load, o.strict, &damage[0], &damage[1]);
  if (!d.ok()) return ReportError(d.status());
  // A damaged side (not --strict): the warning on stderr as every command
  // words it; the diff itself says it too (`warnings`).
  (void)CheckDamage(o.a, damage[0], false, "comparing");
  (void)CheckDamage(o.b, damage[1], false, "comparing");
  if (o.json) {
    analysis::WriteJsonDiff(*d, std::cout);
  } else {
    analysis::WriteTextDiff(*d, o.top, std::cout);
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
