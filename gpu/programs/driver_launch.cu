// Kernels launched through the driver API, as cuBLASLt, cuDNN, CUTLASS and
// Triton launch theirs, next to runtime launches. Expected: 5 runtime
// launches of `runtime_kernel` (cudaLaunchKernel rows), 7 cuLaunchKernel and
// 3 cuLaunchKernelEx launches of `driver_kernel` (driver API rows with the
// kernels' correlation ids), 2 cuMemsetD32Async and 1 cuMemcpyDtoHAsync
// (driver rows), and no driver row for any runtime call.
#include <cuda.h>

#include "check.h"

__global__ void runtime_kernel(int* p) { atomicAdd(p, 1); }
extern "C" __global__ void driver_kernel(int* p) { atomicAdd(p, 2); }

int main() {
  int* d = nullptr;
  CHECK(cudaMalloc(&d, 64 * sizeof(int)));
  for (int i = 0; i < 5; ++i) runtime_kernel<<<1, 1>>>(d);
  CHECK(cudaGetLastError());
  CUfunction f;
  CHECK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(&driver_kernel)));
  void* args[] = {&d};
  for (int i = 0; i < 7; ++i)
    CU_CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  CUlaunchConfig cfg = {};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
  for (int i = 0; i < 3; ++i) CU_CHECK(cuLaunchKernelEx(&cfg, f, args, nullptr));
  for (int i = 0; i < 2; ++i) CU_CHECK(cuMemsetD32Async(CUdeviceptr(d) + 128, 0, 8, nullptr));
  int host[4];
  CU_CHECK(cuMemcpyDtoHAsync(host, CUdeviceptr(d), sizeof(host), nullptr));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
  std::printf("driver_launch: done sum=%d\n", host[0]);
  return 0;
}
