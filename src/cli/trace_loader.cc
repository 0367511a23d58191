#include "trace_loader.h"

#include <cstdio>

#include "tracesmith/format/sbt.h"

namespace tracesmith::cli {

void AddStrictFlag(CLI::App* cmd, bool* strict) {
  cmd->add_flag("--strict", *strict,
                "Fail (exit 1, write nothing) if a trace is damaged; without it, damage is a "
                "warning and the readable part is used");
}

Status CheckDamage(const std::string& path, const format::ReadReport& report, bool strict,
                   const char* doing) {
  if (report.clean()) return OkStatus();
  if (strict) return report.DamageStatus(path);
  std::fprintf(stderr, "tracesmith: warning: %s; %s only its readable part:\n%s",
               report.Headline(path).c_str(), doing, report.Describe().c_str());
  return OkStatus();
}

bool HasReplayPayloads(const std::string& path) {
  auto reader = format::SbtReader::Open(path);
  if (!reader.ok()) return false;
  for (const format::ChunkIndexEntry& e : (*reader)->chunks())
    if (e.type >= format::kFirstRawChunkType && e.type <= format::kLastRawChunkType) return true;
  return false;
}

StatusOr<LoadedTrace> LoadTrace(const std::string& path, bool strict, const char* doing) {
  LoadedTrace out;
  ASSIGN_OR_RETURN(out.trace, format::ReadTraceFile(path, &out.report));
  RETURN_IF_ERROR(CheckDamage(path, out.report, strict, doing));
  return out;
}

int ReportError(const Status& status) {
  std::fprintf(stderr, "tracesmith: error: %s\n", status.message().c_str());
  switch (status.code()) {
    case StatusCode::kIoError:
      return 2;
    case StatusCode::kInternal:
      return 3;
    default:
      return 1;
  }
}

}  // namespace tracesmith::cli
