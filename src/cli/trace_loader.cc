#include "trace_loader.h"

#include <cstdio>

namespace tracesmith::cli {

StatusOr<LoadedTrace> LoadTrace(const std::string& path, bool quiet) {
  LoadedTrace out;
  ASSIGN_OR_RETURN(out.trace, format::ReadTraceFile(path, &out.report));
  if (!quiet && !out.report.clean()) {
    std::fprintf(stderr,
                 "tracesmith: warning: %s is damaged; %llu of %llu bytes were readable and are "
                 "used:\n%s",
                 path.c_str(), static_cast<unsigned long long>(out.report.valid_bytes),
                 static_cast<unsigned long long>(out.report.file_size),
                 out.report.Describe().c_str());
  }
  return out;
}

int ReportError(const Status& status) {
  std::fprintf(stderr, "tracesmith: error: %s\n", status.message().c_str());
  switch (status.code()) {
    case StatusCode::kIoError: return 2;
    case StatusCode::kInternal: return 3;
    default: return 1;
  }
}

}  // namespace tracesmith::cli
