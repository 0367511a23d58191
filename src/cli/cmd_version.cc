#include <cstdio>

#include "commands.h"
#include "tracesmith/format/sbt.h"

#ifndef TS_VERSION
#define TS_VERSION "dev"
#endif

namespace tracesmith::cli {

void AddVersionCommand(CLI::App& app, CommandList& commands) {
  auto* cmd = app.add_subcommand("version", "Print the TraceSmith version and SBT format version");
  commands.emplace_back(cmd, [] {
    std::printf("tracesmith %s (SBT format %u.%u, CUDA capture: %s)\n", TS_VERSION,
                format::kMajorVersion, format::kMinorVersion,
#ifdef TS_HAVE_CUDA
                "built in"
#else
                "not built"
#endif
    );
    return kExitOk;
  });
}

}  // namespace tracesmith::cli
