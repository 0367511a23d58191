// cudaProfilerStart/Stop around the middle of a run.
// Expected with --capture-range=cudaProfilerApi: exactly 7 "range_kernel" kernels
// (5 before the range and 5 after it are not recorded).
#include <cuda_profiler_api.h>

#include "check.h"

__global__ void range_kernel(int* x) { x[threadIdx.x] += 1; }

int main() {
  int* x = nullptr;
  CHECK(cudaMalloc(&x, 32 * sizeof(int)));
  for (int i = 0; i < 5; ++i) range_kernel<<<1, 32>>>(x);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaProfilerStart());
  for (int i = 0; i < 7; ++i) range_kernel<<<1, 32>>>(x);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaProfilerStop());
  for (int i = 0; i < 5; ++i) range_kernel<<<1, 32>>>(x);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(x));
  std::printf("profiler_range: done\n");
  return 0;
}
