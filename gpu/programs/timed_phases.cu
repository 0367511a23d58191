// Three phases of 50 launches, 1.5 s apart, for --delay / --duration.
// Usage: timed_phases
// Expected trace: "phase_a", "phase_b", "phase_c" kernels, 50 each, with
// phase A right after CUDA init, B 1.5 s later, C 3 s later.
#include <unistd.h>

#include "check.h"

__global__ void phase_a(float* p) { p[threadIdx.x] += 1.0f; }
__global__ void phase_b(float* p) { p[threadIdx.x] += 2.0f; }
__global__ void phase_c(float* p) { p[threadIdx.x] += 3.0f; }

int main() {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 1024 * sizeof(float)));
  for (int i = 0; i < 50; ++i) phase_a<<<1, 256>>>(d);
  CHECK(cudaDeviceSynchronize());
  usleep(1500 * 1000);
  for (int i = 0; i < 50; ++i) phase_b<<<1, 256>>>(d);
  CHECK(cudaDeviceSynchronize());
  usleep(1500 * 1000);
  for (int i = 0; i < 50; ++i) phase_c<<<1, 256>>>(d);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  std::printf("timed_phases: done\n");
  return 0;
}
