#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "commands.h"
#include "huge_pages.h"
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

void AddVersionCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand("version", "Print the TraceSmith version and SBT format version");
  auto verbose = std::make_shared<bool>(false);
  cmd->add_flag("-v,--verbose", *verbose,
                "Also say how this process allocates memory (transparent huge pages)");
  commands.emplace_back(cmd, [=] {
    std::printf("%s\n", VersionLine().c_str());
    if (*verbose) std::printf("%s\n", HugePagesLine().c_str());
    return kExitOk;
  });
  // `tracesmith --version`: the same line.
  app.set_version_flag("--version", std::function<std::string()>(VersionLine),
                       "Print the TraceSmith version and SBT format version");
}

}  // namespace tracesmith::cli
