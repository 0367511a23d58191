// `tracesmith benchmark <what>`: measured, reproducible performance numbers.
#include "commands.h"

namespace tracesmith::cli {

void AddBenchmarkCommand(Cmd& app, CommandList& commands) {
  auto* bench = app.add_subcommand(
      "benchmark", "Measure TraceSmith's own performance (format, stacks, analysis, export)");
  bench->require_subcommand(1);
  AddBenchmarkSubcommands(*bench, commands);
}

}  // namespace tracesmith::cli
