// Loading a trace for a command: reads it, and tells the user on stderr
// what was recovered from a damaged or unfinished file.
#pragma once

#include <string>

#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::cli {

struct LoadedTrace {
  model::Trace trace;
  format::ReadReport report;
};

// Prints a warning per damaged range unless `quiet`.
StatusOr<LoadedTrace> LoadTrace(const std::string& path, bool quiet = false);

}  // namespace tracesmith::cli
