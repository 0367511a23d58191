// A run opened as one trace, for the commands that read one trace (analyze,
// export, timeline, diff, view, memory, report, kernel).
//
// One file: read in place, exactly as before runs existed. Several files:
// read as one source merged on the fly (run_source.h): no temporary file,
// each chunk decoded once; path() is empty and source() is the way in.
// (`tracesmith merge`, MergeTraces, writes the same rows to a file.)
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/cluster/job_files.h"
#include "tracesmith/cluster/merge.h"
#include "tracesmith/cluster/run_source.h"
#include "tracesmith/format/trace_source.h"

namespace tracesmith::cluster {

struct OpenRunOptions {
  bool single_file = false;  // ResolveRun's single_file (--single)
  bool strict = false;       // a damaged input of a merge is an error (MergeOptions::strict)
};

class OpenedRun {
 public:
  static StatusOr<OpenedRun> Open(std::span<const std::string> args,
                                  const OpenRunOptions& options = {});
  OpenedRun(OpenedRun&&) noexcept = default;
  OpenedRun& operator=(OpenedRun&&) noexcept = default;

  // The trace file to read: the run's one file; empty for several files
  // (read on the fly).
  const std::string& path() const { return path_; }
  // The run as one trace source: the one file, or the files merged on the
  // fly. Opened on the first call (a file that is not a trace is the error
  // then).
  StatusOr<format::TraceSource*> source();
  // Several files: the source (its result() after a whole pass says all
  // the merge did); else null.
  const RunSource* run_source() const { return run_source_; }
  // The run's files (ResolveRun's order). Cross-rank analysis reads these
  // per-process traces one by one.
  const std::vector<std::string>& files() const { return run_.files; }
  // Arguments that stood for more than themselves (ResolveRun).
  const std::vector<std::string>& expanded() const { return run_.expanded; }
  // The run in messages and reports: the one file's path, or e.g.
  // "run.sbt (4 traces)".
  const std::string& name() const { return name_; }
  bool merged() const { return merge_.has_value(); }
  // Several files: what the survey found when the run was opened (each
  // input's damage, notes: RunSource::result() then); else null.
  const MergeResult* merge_result() const { return merge_ ? &*merge_ : nullptr; }

 private:
  OpenedRun() = default;
  RunFiles run_;
  std::string path_, name_;
  std::optional<MergeResult> merge_;
  std::unique_ptr<format::TraceSource> source_;
  RunSource* run_source_ = nullptr;  // source_, for several files
};

// How a run is called in messages: "run.sbt" (one file), "run.sbt (4
// traces)", "a.sbt + 2 more (3 traces)" (several arguments).
std::string RunDisplayName(std::span<const std::string> args, size_t files);

}  // namespace tracesmith::cluster
