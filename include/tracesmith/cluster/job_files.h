// The trace files of a run, from what a user names on the command line.
//
// A run is named by
//  - one or more trace files;
//  - a directory: its *.sbt files (hidden ones left out);
//  - the output name of the capture, its stem: `run.sbt` stands for run.sbt
//    and the run.rank<N>.sbt / run.pid<N>.sbt files beside it
//    (format/job_file_names.h), whether run.sbt itself exists or not (under
//    torchrun every process writes a rank file and none writes run.sbt).
// The files come back in one order, whatever the order of the arguments:
// rank files by rank, then the files named without a rank or pid (run.sbt,
// the first process of a tree; other names, in natural order), then pid
// files by pid. A file named twice (through two arguments, or links) is
// read once.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::cluster {

struct RunFiles {
  std::vector<std::string> files;
  // Arguments that are a file and stood for more files (run.sbt with its
  // rank or pid files): a command says so, since naming a file used to mean
  // that file alone.
  std::vector<std::string> expanded;
};

// The files of the run `args` names. `single_file`: exactly one argument,
// taken as that file alone (the CLI's --single). Errors say what was looked
// for and where, e.g. "no trace matches 'run.sbt': looked for run.sbt,
// run.rank*.sbt, run.pid*.sbt in /data".
StatusOr<RunFiles> ResolveRun(std::span<const std::string> args, bool single_file = false);

}  // namespace tracesmith::cluster
