// `tracesmith merge A B ... -o job.sbt`: the per-process traces of a run in
// one file (cluster/merge.h), for tools and people that want one file per
// job. Inputs are named as every command names a run: files, a directory,
// or the capture's output name.
#include <cstdio>

#include "commands.h"
#include "job_loader.h"
#include "output_rule.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/cluster/merge.h"

namespace tracesmith::cli {
namespace {

struct MergeCliOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool force = false;
  bool strict = false;
  bool quiet = false;
};

int RunMerge(const MergeCliOptions& o) {
  auto run = cluster::ResolveRun(o.inputs);
  if (!run.ok()) return ReportError(run.status());
  // Checked before the work: never an input, and an existing file only with --force.
  if (Status ok = CheckOutputFile(o.output, run->files, o.force); !ok.ok()) return ReportError(ok);
  MergeProgressLine progress;
  cluster::MergeOptions mo;
  mo.strict = o.strict;
  mo.overwrite = o.force;
  mo.progress = [&](const cluster::MergeProgress& p) { progress.Update(p); };
  auto merged = cluster::MergeTraces(run->files, o.output, mo);
  progress.Done();
  if (!merged.ok()) return ReportError(merged.status());
  if (Status st = ReportMerge(*merged, o.strict, "merging"); !st.ok()) return ReportError(st);
  if (!o.quiet)
    std::fprintf(stderr, "tracesmith: merged %s, %s -> %s (%s)\n", merged->Describe().c_str(),
                 HumanBytes(merged->input_bytes).c_str(), o.output.c_str(),
                 HumanBytes(merged->output_bytes).c_str());
  return kExitOk;
}

}  // namespace

void AddMergeCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "merge", "Merge the per-process traces of a run (ranks of a job) into one trace file");
  auto o = std::make_shared<MergeCliOptions>();
  cmd->add_option("inputs", o->inputs,
                  "Traces to merge: files, a directory of them, or a capture's output name "
                  "(run.sbt also reads run.rank*.sbt and run.pid*.sbt)")
      ->required();
  cmd->add_option("-o,--output", o->output, "The merged trace (.sbt)")->required();
  AddForceFlag(cmd, &o->force);
  cmd->add_flag("-q,--quiet", o->quiet, "No summary line on stderr");
  cmd->add_flag("--strict", o->strict,
                "Fail (exit 1, write nothing) if an input is damaged; without it, damage is a "
                "warning and the readable part is merged");
  commands.emplace_back(cmd, [o] { return RunMerge(*o); });
}

}  // namespace tracesmith::cli
