// A run opened as one trace file, for the commands that read one trace
// (analyze, export, timeline, diff, view, memory) and the Python package.
//
// One file: read in place, exactly as before runs existed. Several files:
// merged (merge.h) into a temporary file under $TMPDIR (/tmp without it),
// removed when the OpenedRun goes (and, in the CLI, on SIGINT/SIGTERM/SIGHUP:
// it is an AtomicFile that is never committed). The merge reads each input
// chunk by chunk, so memory stays bounded; the disk holds one more copy of
// the run while it is open.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/status.h"
#include "tracesmith/cluster/job_files.h"
#include "tracesmith/cluster/merge.h"

namespace tracesmith::cluster {

struct OpenRunOptions {
  bool single_file = false;  // ResolveRun's single_file (--single)
  bool strict = false;       // a damaged input of a merge is an error (MergeOptions::strict)
  std::function<void(const MergeProgress&)> progress;
};

class OpenedRun {
 public:
  static StatusOr<OpenedRun> Open(std::span<const std::string> args,
                                  const OpenRunOptions& options = {});
  OpenedRun(OpenedRun&&) noexcept = default;
  OpenedRun& operator=(OpenedRun&&) noexcept = default;

  // The trace file to read: the run's one file, or the merged temporary file.
  const std::string& path() const { return path_; }
  // The run's files (ResolveRun's order). Cross-rank analysis reads these
  // per-process traces one by one.
  const std::vector<std::string>& files() const { return run_.files; }
  // Arguments that stood for more than themselves (ResolveRun).
  const std::vector<std::string>& expanded() const { return run_.expanded; }
  // The run in messages and reports: the one file's path, or e.g.
  // "run.sbt (4 traces)".
  const std::string& name() const { return name_; }
  bool merged() const { return merge_.has_value(); }
  // When merged: what the merge did (each input's damage, notes); else null.
  const MergeResult* merge_result() const { return merge_ ? &*merge_ : nullptr; }

 private:
  OpenedRun() = default;
  RunFiles run_;
  std::string path_, name_;
  std::optional<MergeResult> merge_;
  std::unique_ptr<AtomicFile> temp_;  // the merged file; discarded, never committed
};

// How a run is called in messages: "run.sbt" (one file), "run.sbt (4
// traces)", "a.sbt + 2 more (3 traces)" (several arguments).
std::string RunDisplayName(std::span<const std::string> args, size_t files);

}  // namespace tracesmith::cluster
