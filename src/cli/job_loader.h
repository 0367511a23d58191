// The trace argument of every command that reads one trace (analyze, export,
// timeline, diff, info, view, memory): a run, named by one or more files, a
// directory or the capture's output name (cluster/job_files.h). One file is
// read as it always was; several are read as one source merged on the fly
// (OpenRunSource: the commands that take a format::TraceSource) or merged
// into a temporary file first (OpenRun: the commands that still take a
// path) (cluster/open_job.h). What the user hears about it is said
// here, the same way for every command: that a name stood for several files,
// the merge's notes, each damaged input's warning (trace_loader.h's
// CheckDamage), and a progress line on a terminal while a large run merges.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "tracesmith/cluster/open_job.h"

namespace tracesmith::cli {

struct RunArgs {
  std::vector<std::string> names;  // as given
  bool single = false;             // --single: the file named, alone
};

// Adds the positional trace names (one or more) and --single.
void AddRunArguments(Cmd* cmd, RunArgs* args, const std::string& what);

// A progress line on stderr while a merge runs, when stderr is a terminal
// and the merge takes more than half a second; erased when done.
class MergeProgressLine {
 public:
  MergeProgressLine();
  ~MergeProgressLine() { Done(); }
  void Update(const cluster::MergeProgress& p);
  void Done();

 private:
  bool tty_ = false, shown_ = false;
  double start_ = 0, last_ = 0;
};

// Prints the merge's notes and every damaged input's warning (or, with
// `strict`, returns the first damage as the error), `doing` as in CheckDamage.
Status ReportMerge(const cluster::MergeResult& merge, bool strict, const char* doing);

// Opens the run for a command that reads one trace (OpenedRun), saying what
// the user should know about it on stderr. With `strict`, a damaged input is
// the error (nothing merged is kept).
StatusOr<cluster::OpenedRun> OpenRun(const RunArgs& args, bool strict, const char* doing);

// The same for a command that reads run->source(): several files are merged
// on the fly as the command reads them (no temporary file, no progress line:
// the command's own shows the reading). What the user hears when it opens
// is the same; the notes that only reading finds (flows left out, references
// that pointed nowhere) come with ReportMergeNotesFromReading.
StatusOr<cluster::OpenedRun> OpenRunSource(const RunArgs& args, bool strict, const char* doing);
// After a whole pass over run.source(): the merge's notes not said at open.
void ReportMergeNotesFromReading(const cluster::OpenedRun& run);

}  // namespace tracesmith::cli
