#include "tracesmith/cluster/open_job.h"

#include <unistd.h>

#include <cstdlib>

namespace tracesmith::cluster {

std::string RunDisplayName(std::span<const std::string> args, size_t files) {
  if (args.empty()) return std::string();
  std::string name = args[0];
  if (args.size() > 1) name += StrFormat(" + %zu more", args.size() - 1);
  if (files > 1 || args.size() > 1) name += StrFormat(" (%zu traces)", files);
  return name;
}

StatusOr<OpenedRun> OpenedRun::Open(std::span<const std::string> args,
                                    const OpenRunOptions& options) {
  OpenedRun r;
  ASSIGN_OR_RETURN(r.run_, ResolveRun(args, options.single_file));
  r.name_ = RunDisplayName(args, r.run_.files.size());
  if (r.run_.files.size() == 1) {
    r.path_ = r.run_.files[0];
    if (args.size() == 1 && args[0] == r.path_) r.name_ = r.path_;
    return r;
  }
  if (!options.merge_to_file) {
    MergeOptions mo;
    mo.strict = options.strict;
    ASSIGN_OR_RETURN(std::unique_ptr<RunSource> source, RunSource::Open(r.run_.files, mo));
    r.merge_ = source->result();
    r.run_source_ = source.get();
    r.source_ = std::move(source);
    return r;
  }
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp";
  // The target is never written: the temporary file beside it is the merge.
  ASSIGN_OR_RETURN(
      r.temp_, AtomicFile::Create(dir + "/tracesmith-run-" + std::to_string(::getpid()) + ".sbt"));
  RETURN_IF_ERROR(r.temp_->CloseFd());
  r.path_ = r.temp_->temp_path();
  MergeOptions mo;
  mo.strict = options.strict;
  mo.in_place = true;
  mo.progress = options.progress;
  ASSIGN_OR_RETURN(MergeResult merged, MergeTraces(r.run_.files, r.path_, mo));
  r.merge_ = std::move(merged);
  return r;
}

StatusOr<format::TraceSource*> OpenedRun::source() {
  if (!source_) {
    ASSIGN_OR_RETURN(source_, format::OpenFileSource(path_));
  }
  return source_.get();
}

}  // namespace tracesmith::cluster
