// `tracesmith profile --gpu-metrics=list`: the GPUs' PM sampling metrics,
// listed by the injection library (which links CUPTI) for the CLI (which
// does not: it loads this library with dlopen, cli/gpu_metrics_list.cc).
#include <cstdio>
#include <string>
#include <vector>

#include "tracesmith/hardware/gpu_metrics_list.h"

#define TS_C_API extern "C" __attribute__((visibility("default")))

// Calls `line` once per line of the list; 0. On failure -1 and the reason in
// `error` (NUL-terminated, truncated to fit).
TS_C_API int tracesmith_gpu_metrics_list(void (*line)(const char* text, void* user), void* user,
                                         char* error, size_t error_len) {
  auto lines = tracesmith::hardware::ListPmSamplingMetrics();
  if (!lines.ok()) {
    if (error && error_len) std::snprintf(error, error_len, "%s", lines.status().message().c_str());
    return -1;
  }
  for (const std::string& l : *lines) line(l.c_str(), user);
  return 0;
}
