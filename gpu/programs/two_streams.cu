// Two streams, each running one ~50 ms spin kernel at the same time.
// Expected trace: two "spin" kernels on different stream ids whose time ranges overlap.
#include "check.h"

__global__ void spin(long long cycles, int* out) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0) out[blockIdx.x] = 1;
}

int main() {
  cudaStream_t s[2];
  int* out = nullptr;
  CHECK(cudaMalloc(&out, 64 * sizeof(int)));
  for (auto& st : s) CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  long long cycles = static_cast<long long>(clock_khz) * 50;  // ~50 ms
  spin<<<1, 32, 0, s[0]>>>(cycles, out);
  spin<<<1, 32, 0, s[1]>>>(cycles, out + 1);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  for (auto& st : s) CHECK(cudaStreamDestroy(st));
  CHECK(cudaFree(out));
  std::printf("two_streams: done\n");
  return 0;
}
