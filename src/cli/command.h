// How CLI commands plug into `tracesmith`: each command file defines one
// Add<Name>Command(CLI::App&, CommandList&) that adds a subcommand and the
// function that runs it. main.cc calls them all and runs the one selected.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::cli {

// (subcommand, run) pairs; run returns the process exit code.
using CommandList = std::vector<std::pair<CLI::App*, std::function<int()>>>;

// Prints "tracesmith: error: <message>" to stderr; returns the exit code for it
// (1 for errors in input data or usage, 2 for I/O, 3 for internal errors).
int ReportError(const Status& status);

// Exit codes shared by all commands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;

}  // namespace tracesmith::cli
