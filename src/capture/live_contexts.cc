#include "tracesmith/capture/live_contexts.h"

namespace tracesmith::capture {
namespace {

void WithCurrent(CUcontext ctx, const std::function<void(CUcontext)>& fn) {
  if (cuCtxPushCurrent(ctx) != CUDA_SUCCESS) return;
  fn(ctx);
  CUcontext popped = nullptr;
  cuCtxPopCurrent(&popped);
}

}  // namespace

void ForEachLiveContext(const std::function<void(CUcontext)>& fn) {
  int n = 0;
  if (cuDeviceGetCount(&n) != CUDA_SUCCESS) return;  // no cuInit yet: no context either
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) != CUDA_SUCCESS) current = nullptr;
  if (current) WithCurrent(current, fn);
  for (int i = 0; i < n; ++i) {
    CUdevice dev = 0;
    unsigned int flags = 0;
    int active = 0;
    if (cuDeviceGet(&dev, i) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active)
      continue;
    CUcontext ctx = nullptr;
    if (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) continue;
    if (ctx != current) WithCurrent(ctx, fn);
    cuDevicePrimaryCtxRelease(dev);
  }
}

}  // namespace tracesmith::capture
