// Launches on every GPU: device d gets 10 * (d + 1) launches of "on_device",
// each on its own stream, from one thread.
// Usage: multi_gpu      Expected trace: per device d, 10 * (d + 1) kernels.
#include "check.h"

__global__ void on_device(float* p) { p[threadIdx.x] += 1.0f; }

int main() {
  int n = 0;
  CHECK(cudaGetDeviceCount(&n));
  for (int d = 0; d < n; ++d) {
    CHECK(cudaSetDevice(d));
    float* p = nullptr;
    cudaStream_t s;
    CHECK(cudaMalloc(&p, 1024 * sizeof(float)));
    CHECK(cudaStreamCreate(&s));
    for (int i = 0; i < 10 * (d + 1); ++i) on_device<<<1, 256, 0, s>>>(p);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(p));
  }
  std::printf("multi_gpu: devices=%d\n", n);
  return 0;
}
