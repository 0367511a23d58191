#include "tracesmith/cluster/open_job.h"

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
  MergeOptions mo;
  mo.strict = options.strict;
  ASSIGN_OR_RETURN(std::unique_ptr<RunSource> source, RunSource::Open(r.run_.files, mo));
  r.merge_ = source->result();
  r.run_source_ = source.get();
  r.source_ = std::move(source);
  return r;
}

StatusOr<format::TraceSource*> OpenedRun::source() {
  if (!source_) {
    ASSIGN_OR_RETURN(source_, format::OpenFileSource(path_));
  }
  return source_.get();
}

}  // namespace tracesmith::cluster
