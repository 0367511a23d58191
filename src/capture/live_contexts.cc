#include "live_contexts.h"

#include <algorithm>

namespace tracesmith::capture {

std::vector<CUcontext> LiveContexts() {
  std::vector<CUcontext> out;
  int n = 0;
  if (cuDeviceGetCount(&n) != CUDA_SUCCESS) return out;  // no cuInit yet: no context either
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current) out.push_back(current);
  for (int i = 0; i < n; ++i) {
    CUdevice dev = 0;
    unsigned int flags = 0;
    int active = 0;
    if (cuDeviceGet(&dev, i) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active)
      continue;
    CUcontext ctx = nullptr;
    if (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) continue;
    // Active: the program holds it, so it outlives this retain's release.
    if (std::find(out.begin(), out.end(), ctx) == out.end()) out.push_back(ctx);
    cuDevicePrimaryCtxRelease(dev);
  }
  return out;
}

}  // namespace tracesmith::capture
