// `tracesmith profile --gpu-metrics=list` (gpu_metrics_list.h): the CLI links
// no CUPTI, so it loads the injection library and calls its
// tracesmith_gpu_metrics_list (session/gpu_metrics_c_api.cc).
#include "gpu_metrics_list.h"

#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "command.h"
#include "exit_codes.h"
#include "tracesmith/session/run_command.h"

namespace tracesmith::cli {

int ListGpuMetrics() {
#ifdef TS_HAVE_CUDA
  auto found = session::FindInjectLibrary();
  if (!found.ok()) return ReportError(found.status());
  void* lib = dlopen(found->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return ReportError(GpuError("--gpu-metrics=list needs the CUDA driver and a GPU: cannot load " +
                                *found + ": " + std::string(dlerror())));
  using ListFn = int (*)(void (*)(const char*, void*), void*, char*, size_t);
  auto list = reinterpret_cast<ListFn>(dlsym(lib, "tracesmith_gpu_metrics_list"));
  if (!list) return ReportError(GpuError(*found + " has no tracesmith_gpu_metrics_list"));
  char error[1024] = {};
  const int rc = list([](const char* line, void*) { std::printf("%s\n", line); }, nullptr, error,
                      sizeof error);
  std::fflush(stdout);
  if (rc != 0) return ReportError(GpuError(std::string("GPU metrics: ") + error));
  return 0;
#else
  return ReportError(
      Unimplemented("--gpu-metrics=list: this tracesmith was built without CUDA/CUPTI support"));
#endif
}

}  // namespace tracesmith::cli
