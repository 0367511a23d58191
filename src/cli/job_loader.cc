#include "job_loader.h"

#include <algorithm>

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "trace_loader.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith::cli {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void AddRunArguments(Cmd* cmd, RunArgs* args, const std::string& what) {
  cmd->add_option("files", args->names,
                  what +
                      ": one or more trace files, a directory of them, or a capture's output "
                      "name (run.sbt also reads run.rank*.sbt and run.pid*.sbt)")
      ->required();
  cmd->add_flag("--single", args->single,
                "Read only the file named, not the other traces of its run (FILE.rank*, "
                "FILE.pid*)");
}

MergeProgressLine::MergeProgressLine() : tty_(::isatty(STDERR_FILENO) == 1), start_(Now()) {}

void MergeProgressLine::Update(const cluster::MergeProgress& p) {
  if (!tty_) return;
  const double now = Now();
  // Quiet for short merges; then at most 5 updates a second.
  if (now - start_ < 0.5 || now - last_ < 0.2) return;
  last_ = now;
  shown_ = true;
  const double share = p.bytes_total ? double(p.bytes_done) / double(p.bytes_total) : 0;
  std::fprintf(stderr,
               "\rtracesmith: merging trace %zu of %zu: %3.0f%% (%s of %s, %llu events)\033[K",
               p.input + 1, p.inputs, 100 * share, HumanBytes(p.bytes_done).c_str(),
               HumanBytes(p.bytes_total).c_str(), static_cast<unsigned long long>(p.events));
  std::fflush(stderr);
}

void MergeProgressLine::Done() {
  if (!shown_) return;
  shown_ = false;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

Status ReportMerge(const cluster::MergeResult& merge, bool strict, const char* doing) {
  for (const cluster::MergedInput& in : merge.inputs)
    RETURN_IF_ERROR(CheckDamage(in.path, in.damage, strict, doing));
  for (const std::string& note : merge.notes)
    std::fprintf(stderr, "tracesmith: note: %s\n", note.c_str());
  return OkStatus();
}

StatusOr<cluster::OpenedRun> OpenRunSource(const RunArgs& args, bool strict, const char* doing) {
  cluster::OpenRunOptions o;  // several files: merged on the fly as the command reads them
  o.single_file = args.single;
  o.strict = strict;
  auto run = cluster::OpenedRun::Open(args.names, o);
  if (!run.ok()) return run.status();
  for (const std::string& name : run->expanded())
    std::fprintf(stderr,
                 "tracesmith: note: %s is one of a run of %zu traces; reading them all together "
                 "(--single reads %s alone)\n",
                 name.c_str(), run->files().size(), name.c_str());
  if (const cluster::MergeResult* merge = run->merge_result())
    RETURN_IF_ERROR(ReportMerge(*merge, strict, doing));
  return run;
}

void ReportMergeNotesFromReading(const cluster::OpenedRun& run) {
  const cluster::RunSource* source = run.run_source();
  if (source == nullptr || run.merge_result() == nullptr) return;
  const std::vector<std::string>& said = run.merge_result()->notes;
  for (const std::string& note : source->result().notes)
    if (std::find(said.begin(), said.end(), note) == said.end())
      std::fprintf(stderr, "tracesmith: note: %s\n", note.c_str());
}

Status ReadRun(cluster::OpenedRun& run, bool strict, const char* doing, const RunPass& pass,
               const std::function<void()>& done) {
  format::ReadReport damage;
  auto source = run.source();
  Status st = source.ok() ? pass(**source, &damage) : source.status();
  if (done) done();
  RETURN_IF_ERROR(st);
  RETURN_IF_ERROR(CheckDamage(run.path(), damage, strict, doing));
  ReportMergeNotesFromReading(run);
  return OkStatus();
}

}  // namespace tracesmith::cli
