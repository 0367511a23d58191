// How CLI commands plug into `tracesmith`: each command file defines one
// Add<Name>Command(Cmd&, CommandList&) that adds a subcommand and the
// function that runs it. main.cc calls them all and runs the one selected.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "exit_codes.h"
#include "tracesmith/base/status.h"

namespace tracesmith::cli {

// (subcommand, run) pairs; run returns the process exit code.
using CommandList = std::vector<std::pair<Cmd*, std::function<int()>>>;

// Prints "tracesmith: error: <message>" to stderr; returns ExitCodeFor its
// code (exit_codes.h).
int ReportError(const Status& status);

}  // namespace tracesmith::cli
