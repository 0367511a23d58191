// `tracesmith diff A B`: what changed between two traces (before/after an
// optimisation), per kernel and per call site, biggest time change first, and
// each sampled kernel's lines and stall reasons (analysis/pc_diff.h).
// Each side may be a job's traces (a directory or a capture's output name,
// job_loader.h), merged first.
#include <iostream>

#include "commands.h"
#include "job_loader.h"
#include "trace_loader.h"
#include "tracesmith/analysis/diff.h"

namespace tracesmith::cli {
namespace {

struct DiffCliOptions {
  std::string a, b;  // each a run (job_loader.h)
  analysis::LoadOptions load;
  size_t top = 20;
  bool single = false;
  bool json = false;
  bool strict = false;
};

int RunDiff(const DiffCliOptions& o) {
  const RunArgs a{{o.a}, o.single}, b{{o.b}, o.single};
  auto run_a = OpenRunSource(a, o.strict, "comparing");
  if (!run_a.ok()) return ReportError(run_a.status());
  auto run_b = OpenRunSource(b, o.strict, "comparing");
  if (!run_b.ok()) return ReportError(run_b.status());
  auto source_a = run_a->source();
  if (!source_a.ok()) return ReportError(source_a.status());
  auto source_b = run_b->source();
  if (!source_b.ok()) return ReportError(source_b.status());
  format::ReadReport damage[2];
  auto d =
      analysis::DiffTraceSources(**source_a, **source_b, o.load, o.strict, &damage[0], &damage[1]);
  if (!d.ok()) return ReportError(d.status());
  ReportMergeNotesFromReading(*run_a);
  ReportMergeNotesFromReading(*run_b);
  d->a = run_a->name();
  d->b = run_b->name();
  // A damaged side (not --strict): the warning on stderr as every command
  // words it; the diff itself says it too (`warnings`).
  (void)CheckDamage(run_a->path(), damage[0], false, "comparing");
  (void)CheckDamage(run_b->path(), damage[1], false, "comparing");
  if (o.json) {
    analysis::WriteJsonDiff(*d, std::cout);
  } else {
    analysis::WriteTextDiff(*d, o.top, std::cout);
  }
  return kExitOk;
}

}  // namespace

void AddDiffCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "diff",
      "Per-kernel and per-call-site count and GPU time differences between two traces; with GPU "
      "instruction samples (--pc-sampling), how each kernel's samples moved between its source "
      "lines and stall reasons");
  auto o = std::make_shared<DiffCliOptions>();
  cmd->add_option("a", o->a,
                  "Baseline (before): a trace, a directory of a job's traces, or a capture's "
                  "output name (run.sbt also reads run.rank*.sbt and run.pid*.sbt)")
      ->required();
  cmd->add_option("b", o->b, "To compare (after), named the same ways")->required();
  cmd->add_flag("--single", o->single,
                "Read only the files named, not the other traces of their runs");
  cmd->add_option("--top", o->top, "Rows per table (kernels of the samples' section)")
      ->default_val(20);
  cmd->add_flag("--json", o->json, "Machine-readable JSON");
  cmd->add_option("--nvtx", o->load.nvtx, "Compare only work issued inside these NVTX ranges");
  AddStrictFlag(cmd, &o->strict);
  commands.emplace_back(cmd, [o] { return RunDiff(*o); });
}

}  // namespace tracesmith::cli
