#include <cstdio>
#include <functional>
#include <string>

#include "commands.h"
#include "tracesmith/format/sbt.h"

#ifndef TS_VERSION
#define TS_VERSION "dev"
#endif

namespace tracesmith::cli {

std::string VersionLine() {
  char line[160];
  std::snprintf(line, sizeof(line), "tracesmith %s (SBT format %u.%u, CUDA capture: %s)",
                TS_VERSION, format::kMajorVersion, format::kMinorVersion,
#ifdef TS_HAVE_CUDA
                "built in"
#else
                "not built"
#endif
  );
  return line;
}

void AddVersionCommand(CLI::App& app, CommandList& commands) {
  auto* cmd = app.add_subcommand("version", "Print the TraceSmith version and SBT format version");
  commands.emplace_back(cmd, [] {
    std::printf("%s\n", VersionLine().c_str());
    return kExitOk;
  });
  // `tracesmith --version`: the same line.
  app.set_version_flag("--version", std::function<std::string()>(VersionLine),
                       "Print the TraceSmith version and SBT format version");
}

}  // namespace tracesmith::cli
