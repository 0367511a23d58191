// The files a capture run leaves behind, and replacing an existing trace.
//
// In a run, the first process to initialise CUDA writes the output FILE; every
// other process writes <stem>.pid<PID><ext>, or <stem>.rank<RANK><ext> when
// RANK is set (torchrun). PerProcessOutputPath (capture_options.h) names one
// process's file; FindOutputs is its inverse and finds them all after the run.
//
// Replacing an existing FILE (`profile --force`, RunOptions with
// capture.overwrite) goes through PreviousTrace: the old file is set aside
// until the run ends and comes back when the run wrote no new one.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::session {

// Files of a run writing `output`: `output` itself when it exists, then the
// <stem>.pid*<ext> and <stem>.rank*<ext> beside it modified at or after
// `since`, in natural order (numbers as numbers: rank2 before rank10). Other
// names in the folder are left out; a folder that cannot be read gives only
// `output`.
std::vector<std::string> FindOutputs(const std::string& output, time_t since);

// An existing trace set aside before a run, so that the injection library
// creates FILE afresh, exactly as when FILE did not exist. SetAside renames
// it to a hidden name beside it (".<name>.old-<pid>-XXXXXX"); Settle, after
// the run, deletes it when the run wrote a new FILE and otherwise renames it
// back: a run that records nothing (no process initialised CUDA) does not
// destroy the last trace. Renames within one directory are atomic; if the
// process is killed meanwhile, the old trace survives under the hidden name.
// An object that was never settled settles when destroyed.
class PreviousTrace {
 public:
  // Sets `path` aside when it exists; otherwise there is nothing to settle.
  static StatusOr<PreviousTrace> SetAside(const std::string& path);

  PreviousTrace() = default;
  PreviousTrace(PreviousTrace&& other) noexcept;
  PreviousTrace& operator=(PreviousTrace&& other) noexcept;
  PreviousTrace(const PreviousTrace&) = delete;
  PreviousTrace& operator=(const PreviousTrace&) = delete;
  ~PreviousTrace();

  // True when a file was set aside and is not settled yet.
  bool pending() const { return !aside_.empty(); }
  // The hidden name the old file has while it is set aside.
  const std::string& aside_path() const { return aside_; }

  // True: the old trace is back under its name (no new one was written).
  // False: a new FILE replaced it, or nothing was set aside. IoError: it could
  // not be put back; the message says under which name it is kept. Only the
  // first call does anything.
  StatusOr<bool> Settle();

 private:
  std::string path_, aside_;
};

}  // namespace tracesmith::session
