// One rule for every command that writes a file: an existing file is replaced
// only with --force (profile, export, import, symbolize -o), and never when it
// is one of the command's inputs, a directory or a device (CheckOutputPath).
#pragma once

#include <CLI/CLI.hpp>

#include <span>
#include <string>

#include "tracesmith/base/status.h"

namespace tracesmith::cli {

// OK when `out` may be written; checked before any work is done.
Status CheckOutputFile(const std::string& out, std::span<const std::string> inputs, bool force);

// Adds --force ("replace an existing output file") to a writing command.
void AddForceFlag(CLI::App* cmd, bool* force);

}  // namespace tracesmith::cli
