// N launches of one known kernel, known copies and memsets, NVTX ranges.
// Usage: kernel_count [N=1000]
// Expected trace: exactly N kernels "scale_kernel" grid (7,3,1) block (64,2,1);
// memcpy HtoD 1 MiB x1, DtoH 1 MiB x1, DtoD 256 KiB x1; memset 4096 B x2 (value 0
// and 0x7f); NVTX ranges "outer" (depth 0) and "inner" (depth 1), marker "mark".
#include <nvtx3/nvToolsExt.h>

#include <vector>

#include "check.h"

__global__ void scale_kernel(float* data, int n, float f) {
  int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y +
          threadIdx.y * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * f + 1.0f;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int elems = 1 << 18;  // 1 MiB of floats
  std::vector<float> host(elems, 1.0f);
  float *d = nullptr, *d2 = nullptr;
  CHECK(cudaMalloc(&d, elems * sizeof(float)));
  CHECK(cudaMalloc(&d2, elems * sizeof(float)));
  nvtxRangePushA("outer");
  CHECK(cudaMemcpy(d, host.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d2, 0, 4096));
  CHECK(cudaMemset(d2, 0x7f, 4096));
  nvtxRangePushA("inner");
  for (int i = 0; i < n; ++i) scale_kernel<<<dim3(7, 3, 1), dim3(64, 2, 1)>>>(d, elems, 0.5f);
  CHECK(cudaGetLastError());
  nvtxRangePop();
  nvtxMarkA("mark");
  CHECK(cudaMemcpy(d2, d, elems, cudaMemcpyDeviceToDevice));  // 256 KiB
  CHECK(cudaMemcpy(host.data(), d, elems * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
  CHECK(cudaFree(d));
  CHECK(cudaFree(d2));
  std::printf("kernel_count: launched %d\n", n);
  return 0;
}
