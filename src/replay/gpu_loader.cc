// Finding, loading and calling libtracesmith-replay-gpu.so (see
// gpu_replayer.h). In the CPU replay library so that every user (the CLI,
// tests, embedders) finds the replayer the same way and gets the same errors.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "tracesmith/replay/gpu_replayer.h"

namespace tracesmith::replay {

StatusOr<GpuReplayer> LoadGpuReplayer() {
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
    GpuReplayer r;
    r.path = c;
    r.entry = reinterpret_cast<ReplayGpuEntry>(::dlsym(lib, kReplayGpuEntryName));
    if (!r.entry)
      return FailedPrecondition(c + ": no " + kReplayGpuEntryName +
                                ": not the GPU replayer of this tracesmith (one of another "
                                "build?); rebuild the target tracesmith-replay-gpu, or point "
                                "TRACESMITH_REPLAY_GPU_LIB at the one built with this tracesmith");
    return r;
  }
  return NotFound(std::string("GPU replay needs ") + kReplayGpuLibName +
                  ", built only with CUDA (not found:" + tried +
                  "; set TRACESMITH_REPLAY_GPU_LIB). Without a GPU, --dry-run emulates the "
                  "recorded schedule");
}

Status ValidateReplayRequest(const ReplayGpuRequest& r) {
  if (r.range_first >= 0 && r.launch >= 0)
    return InvalidArgument("--range and --launch exclude each other");
  if (r.range_first >= 0 && r.range_last < r.range_first)
    return InvalidArgument(StrFormat("range %lld..%lld ends before it starts",
                                     static_cast<long long>(r.range_first),
                                     static_cast<long long>(r.range_last)));
  // A range is timed on the host clock with image restores inside the
  // span; re-running a sequence on the memory it left is no measurement of
  // back-to-back kernels either.
  if (r.node >= 0 && r.launch < 0)
    return InvalidArgument(
        "--node K replays node K of a graph launch: name the graph launch with --launch G");
  if (r.node >= 0 && (r.flags & kReplayFlagWarm))
    return InvalidArgument(
        "--warm with --node: a graph node is timed on inputs rebuilt by its preceding nodes; "
        "warm runs of one node are not supported (replay the whole graph launch, or without "
        "--warm)");
  if ((r.flags & kReplayFlagWarm) && r.range_first >= 0)
    return InvalidArgument(
        "--warm times single launches: a range replay is timed on the host clock with its image "
        "restores inside the span, so it has no warm kernel time; replay its launches without "
        "--range (--launch N) for warm and cold kernel times");
  if (r.metrics && r.range_first >= 0)
    return InvalidArgument(
        "--metrics measures single launches: a range replay runs a sequence with image restores "
        "between its launches; replay its launches without --range (--launch N) for their "
        "counters");
  return OkStatus();
}

StatusOr<int> RunGpuReplay(const ReplayGpuRequest& request) {
  RETURN_IF_ERROR(ValidateReplayRequest(request));
  ASSIGN_OR_RETURN(GpuReplayer lib, LoadGpuReplayer());
  return lib.entry(&request);
}

std::string ReplayProgressText(const ReplayProgress& p) {
  std::string kernel = p.kernel ? p.kernel : "";
  if (p.range) return kernel;
  constexpr size_t kMaxKernel = 40;  // the line must fit one terminal row
  if (kernel.size() > kMaxKernel) kernel = kernel.substr(0, kMaxKernel - 3) + "...";
  return StrFormat("launch %llu (%llu of %llu) %s", static_cast<unsigned long long>(p.index),
                   static_cast<unsigned long long>(std::min(p.launches_done + 1, p.launches_total)),
                   static_cast<unsigned long long>(p.launches_total), kernel.c_str());
}

double ReplayProgressFraction(const ReplayProgress& p) {
  if (!p.launches_total) return 0;
  const double current = p.replays_total ? double(p.replays_done) / double(p.replays_total) : 0;
  return std::min(1.0, (double(p.launches_done) + current) / double(p.launches_total));
}

}  // namespace tracesmith::replay
