// One rule for every command that writes a file: an existing file is replaced
// only with --force (profile, export, import, symbolize -o), and never when it
// is one of the command's inputs, a directory or a device: CheckOutputFile in
// base/atomic_file.h (the Python package applies the same function).
#pragma once

#include <span>
#include <string>

#include "args.h"
#include "tracesmith/base/atomic_file.h"  // CheckOutputFile
#include "tracesmith/base/status.h"

namespace tracesmith::cli {

// Adds --force ("replace an existing output file") to a writing command.
void AddForceFlag(Cmd* cmd, bool* force);

}  // namespace tracesmith::cli
