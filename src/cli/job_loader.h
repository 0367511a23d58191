// The trace argument of every command that reads one trace (analyze, export,
// timeline, diff, info, view, memory, report, kernel): a run, named by one or
// more files, a directory or the capture's output name (cluster/job_files.h).
// One file is read as it always was; several are read as one source merged
// on the fly (cluster/open_job.h, cluster/run_source.h): no temporary file.
// What the user hears about it is said here, the same way for every command:
// that a name stood for several files, the merge's notes, each damaged
// input's warning (trace_loader.h's CheckDamage); the progress line of a
// merge to a file (`merge`: MergeProgressLine) on a terminal.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "args.h"
#include "tracesmith/cluster/open_job.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"

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

// Opens the run for a command that reads one trace (OpenedRun, read through
// run->source()), saying what the user should know about it on stderr: a
// name that stood for several files, each damaged input's warning (or, with
// `strict`, the first damage as the error) and the merge's notes. Several
// files are merged on the fly as the command reads them (no temporary file;
// the command's own progress line shows the reading). The notes that only
// reading finds (flows left out, references that pointed nowhere) come with
// ReportMergeNotesFromReading.
StatusOr<cluster::OpenedRun> OpenRunSource(const RunArgs& args, bool strict, const char* doing);
// After a whole pass over run.source(): the merge's notes not said at open.
void ReportMergeNotesFromReading(const cluster::OpenedRun& run);

// A command's one pass over the run it opened (OpenRunSource), and what every
// command says after it: `pass` reads run.source() and fills the ReadReport it
// is given with what it found damaged; then `done` runs (the command's
// progress line closed, so that what follows starts a line of its own), then
// the damage is reported as CheckDamage does (with `strict`, the error
// returned) and the merge's notes found while reading are printed
// (ReportMergeNotesFromReading). The source's error or the pass's is
// returned after `done`, with nothing said.
using RunPass = std::function<Status(format::TraceSource& source, format::ReadReport* damage)>;
Status ReadRun(cluster::OpenedRun& run, bool strict, const char* doing, const RunPass& pass,
               const std::function<void()>& done = {});

}  // namespace tracesmith::cli
