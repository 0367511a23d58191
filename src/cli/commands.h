// The list of commands. Each Add*Command lives in its own cmd_<name>.cc.
#pragma once

#include <string>

#include "command.h"

namespace tracesmith::cli {

void AddVersionCommand(Cmd& app, CommandList& commands);
// "tracesmith 0.1.0 (SBT format 1.0, CUDA capture: built in)": `version` and `--version`.
std::string VersionLine();
void AddInfoCommand(Cmd& app, CommandList& commands);
void AddViewCommand(Cmd& app, CommandList& commands);
void AddBenchmarkCommand(Cmd& app, CommandList& commands);
void AddAnalyzeCommand(Cmd& app, CommandList& commands);
void AddMemoryCommand(Cmd& app, CommandList& commands);
void AddKernelCommand(Cmd& app, CommandList& commands);
void AddTimelineCommand(Cmd& app, CommandList& commands);
void AddDiffCommand(Cmd& app, CommandList& commands);
void AddProfileCommand(Cmd& app, CommandList& commands);  // profile + record
void AddDevicesCommand(Cmd& app, CommandList& commands);
void AddReplayCommand(Cmd& app, CommandList& commands);
void AddExportCommand(Cmd& app, CommandList& commands);
void AddImportCommand(Cmd& app, CommandList& commands);
void AddSymbolizeCommand(Cmd& app, CommandList& commands);
void AddMergeCommand(Cmd& app, CommandList& commands);
void AddReportCommand(Cmd& app, CommandList& commands);

// `tracesmith benchmark <what>` subcommands (cmd_benchmark_<what>.cc).
void AddBenchmarkFormatCommand(Cmd& benchmark, CommandList& commands);
void AddBenchmarkExportCommand(Cmd& benchmark, CommandList& commands);
void AddBenchmarkAnalyzeCommand(Cmd& benchmark, CommandList& commands);
void AddBenchmarkStacksCommand(Cmd& benchmark, CommandList& commands);
void AddBenchmarkScaleCommand(Cmd& benchmark, CommandList& commands);
void AddBenchmarkJobCommand(Cmd& benchmark, CommandList& commands);
void AddBenchmarkMergeCommand(Cmd& benchmark, CommandList& commands);

inline void AddBenchmarkSubcommands(Cmd& benchmark, CommandList& commands) {
  AddBenchmarkFormatCommand(benchmark, commands);
  AddBenchmarkExportCommand(benchmark, commands);
  AddBenchmarkAnalyzeCommand(benchmark, commands);
  AddBenchmarkStacksCommand(benchmark, commands);
  AddBenchmarkScaleCommand(benchmark, commands);
  AddBenchmarkJobCommand(benchmark, commands);
  AddBenchmarkMergeCommand(benchmark, commands);
}

inline void AddAllCommands(Cmd& app, CommandList& commands) {
  AddProfileCommand(app, commands);
  AddDevicesCommand(app, commands);
  AddInfoCommand(app, commands);
  AddViewCommand(app, commands);
  AddExportCommand(app, commands);
  AddImportCommand(app, commands);
  AddAnalyzeCommand(app, commands);
  AddMemoryCommand(app, commands);
  AddKernelCommand(app, commands);
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
