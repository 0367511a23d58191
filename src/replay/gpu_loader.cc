// Finding and loading libtracesmith-replay-gpu.so (see gpu_replayer.h). In
// the CPU replay library so that every user (the CLI, tests, embedders) finds
// the replayer the same way and gets the same errors.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tracesmith/replay/gpu_replayer.h"

namespace tracesmith::replay {

StatusOr<ReplayGpuEntry> LoadGpuReplayer() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("TRACESMITH_REPLAY_GPU_LIB"); env && *env) {
    candidates.push_back(env);
  } else {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    std::string dir = n > 0 ? std::string(buf, size_t(n)) : std::string("./x");
    dir = dir.substr(0, dir.rfind('/'));
    for (const char* sub : {"/../lib/", "/"}) candidates.push_back(dir + sub + kReplayGpuLibName);
  }
  std::string tried;
  for (const std::string& c : candidates) {
    struct stat sb;
    if (::stat(c.c_str(), &sb) != 0) {
      tried += " " + c;
      continue;
    }
    void* lib = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return FailedPrecondition(c + ": cannot load: " + ::dlerror() +
                                " (GPU replay needs the NVIDIA driver's libcuda.so.1)");
    auto entry = reinterpret_cast<ReplayGpuEntry>(::dlsym(lib, kReplayGpuEntryName));
    if (!entry) return FailedPrecondition(c + ": no " + kReplayGpuEntryName);
    return entry;
  }
  return NotFound(std::string("GPU replay needs ") + kReplayGpuLibName +
                  ", built only with CUDA (not found:" + tried +
                  "; set TRACESMITH_REPLAY_GPU_LIB). Without a GPU, --dry-run emulates the "
                  "recorded schedule");
}

}  // namespace tracesmith::replay
