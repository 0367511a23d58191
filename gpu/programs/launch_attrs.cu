// Launches with launch attributes, for replay capture: one cudaLaunchKernelEx
// with the cooperative and priority attributes, one cudaLaunchCooperativeKernel.
// Expected replay: "launch attributes: cooperative, priority" for launch 0 and
// "launch attributes: cooperative" for launch 1; both identical to the capture.
#include <vector>

#include "check.h"

__global__ void add_one(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

int main() {
  const int n = 128 * 64;
  std::vector<float> host(n, 1.0f);
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  int lo = 0, hi = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaLaunchAttribute attrs[2] = {};
  attrs[0].id = cudaLaunchAttributeCooperative;
  attrs[0].val.cooperative = 1;
  attrs[1].id = cudaLaunchAttributePriority;
  attrs[1].val.priority = hi;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(64);
  config.blockDim = dim3(128);
  config.attrs = attrs;
  config.numAttrs = 2;
  CHECK(cudaLaunchKernelEx(&config, add_one, d, n));
  int count = n;
  void* args[] = {&d, &count};
  CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(add_one), dim3(64), dim3(128), args));
  CHECK(cudaMemcpy(host.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  std::printf("launch_attrs: data[0]=%.1f (expected 3.0)\n", host[0]);
  return host[0] == 3.0f ? 0 : 1;
}
