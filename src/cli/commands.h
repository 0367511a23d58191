// The list of commands. Each Add*Command lives in its own cmd_<name>.cc.
#pragma once

#include <string>

#include "command.h"

namespace tracesmith::cli {

void AddVersionCommand(CLI::App& app, CommandList& commands);
// "tracesmith 0.1.0 (SBT format 1.0, CUDA capture: built in)": `version` and `--version`.
std::string VersionLine();
void AddInfoCommand(CLI::App& app, CommandList& commands);
void AddViewCommand(CLI::App& app, CommandList& commands);
void AddBenchmarkCommand(CLI::App& app, CommandList& commands);
void AddAnalyzeCommand(CLI::App& app, CommandList& commands);
void AddMemoryCommand(CLI::App& app, CommandList& commands);
void AddTimelineCommand(CLI::App& app, CommandList& commands);
void AddDiffCommand(CLI::App& app, CommandList& commands);
void AddProfileCommand(CLI::App& app, CommandList& commands);  // profile + record
void AddDevicesCommand(CLI::App& app, CommandList& commands);
void AddReplayCommand(CLI::App& app, CommandList& commands);
void AddExportCommand(CLI::App& app, CommandList& commands);
void AddImportCommand(CLI::App& app, CommandList& commands);
void AddSymbolizeCommand(CLI::App& app, CommandList& commands);
void AddMergeCommand(CLI::App& app, CommandList& commands);
void AddReportCommand(CLI::App& app, CommandList& commands);

// `tracesmith benchmark <what>` subcommands (cmd_benchmark_<what>.cc).
void AddBenchmarkFormatCommand(CLI::App& benchmark, CommandList& commands);
void AddBenchmarkExportCommand(CLI::App& benchmark, CommandList& commands);
void AddBenchmarkAnalyzeCommand(CLI::App& benchmark, CommandList& commands);
void AddBenchmarkStacksCommand(CLI::App& benchmark, CommandList& commands);
void AddBenchmarkScaleCommand(CLI::App& benchmark, CommandList& commands);
void AddBenchmarkJobCommand(CLI::App& benchmark, CommandList& commands);
void AddBenchmarkMergeCommand(CLI::App& benchmark, CommandList& commands);

inline void AddBenchmarkSubcommands(CLI::App& benchmark, CommandList& commands) {
  AddBenchmarkFormatCommand(benchmark, commands);
  AddBenchmarkExportCommand(benchmark, commands);
  AddBenchmarkAnalyzeCommand(benchmark, commands);
  AddBenchmarkStacksCommand(benchmark, commands);
  AddBenchmarkScaleCommand(benchmark, commands);
  AddBenchmarkJobCommand(benchmark, commands);
  AddBenchmarkMergeCommand(benchmark, commands);
}

inline void AddAllCommands(CLI::App& app, CommandList& commands) {
  AddProfileCommand(app, commands);
  AddDevicesCommand(app, commands);
  AddInfoCommand(app, commands);
  AddViewCommand(app, commands);
  AddExportCommand(app, commands);
  AddImportCommand(app, commands);
  AddAnalyzeCommand(app, commands);
  AddMemoryCommand(app, commands);
  AddReportCommand(app, commands);
  AddTimelineCommand(app, commands);
  AddDiffCommand(app, commands);
  AddMergeCommand(app, commands);
  AddSymbolizeCommand(app, commands);
  AddReplayCommand(app, commands);
  AddBenchmarkCommand(app, commands);
  AddVersionCommand(app, commands);
}

}  // namespace tracesmith::cli
