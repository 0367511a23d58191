// The program `profile --pc-sampling` is checked on (gpu/pc_sampling_check.py,
// issue #39): three kernels of known behaviour, built with -lineinfo, launched
// ROUNDS x ITERS times on two streams so that they run concurrently:
//   pcs_mem  scattered global loads (memory-bound: memory stall reasons),
//   pcs_fma  one dependent FMA chain (compute-bound: fixed-latency dependency),
//   pcs_hot  a loop on one source line (HOT_LINE, printed): its samples land there.
// Prints "pc_sampling_target: hot line FILE:LINE" and the timed loop's wall time
// ("loop_ms N", the median round), which the check compares with and without sampling, and
// each kernel's time per launch when it runs alone ("solo_us"), the reference for sample shares.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.h"
#include "pc_sampling_kernels.cuh"

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 600;
  constexpr unsigned kMask = (1u << 26) - 1;  // 64 Mi floats
  constexpr int kThreads = 256;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = sms * 4;
  float *buf = nullptr, *out = nullptr;
  unsigned* hot = nullptr;
  CHECK(cudaMalloc(&buf, (size_t(kMask) + 1) * sizeof(float)));
  CHECK(cudaMemset(buf, 0, (size_t(kMask) + 1) * sizeof(float)));
  CHECK(cudaMalloc(&out, size_t(blocks) * kThreads * sizeof(float) * 2));
  CHECK(cudaMalloc(&hot, size_t(blocks) * kThreads * sizeof(unsigned)));
  cudaStream_t s[2];
  for (auto& st : s) CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto round = [&](int n) {
    for (int i = 0; i < n; ++i) {
      pcs_mem<<<blocks, kThreads, 0, s[0]>>>(buf, kMask, 512, out);
      pcs_fma<<<blocks, kThreads, 0, s[1]>>>(out + blocks * kThreads, 100000, 1.0001f, 0.5f);
      pcs_hot<<<blocks, kThreads, 0, s[i % 2]>>>(hot, 40000);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  };
  round(5);  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    round(iters);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  // Each kernel alone (20 launches in a row on one stream): the GPU time it takes when it has
  // the SMs to itself, the reference for its share of the samples.
  float solo[3];
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int k = 0; k < 3; ++k) {
    CHECK(cudaEventRecord(e0, s[0]));
    for (int i = 0; i < 20; ++i) {
      if (k == 0) pcs_mem<<<blocks, kThreads, 0, s[0]>>>(buf, kMask, 512, out);
      if (k == 1)
        pcs_fma<<<blocks, kThreads, 0, s[0]>>>(out + blocks * kThreads, 100000, 1.0001f, 0.5f);
      if (k == 2) pcs_hot<<<blocks, kThreads, 0, s[0]>>>(hot, 40000);
    }
    CHECK(cudaEventRecord(e1, s[0]));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaEventElapsedTime(&solo[k], e0, e1));
  }
  std::printf("pc_sampling_target: solo_us pcs_mem %.1f pcs_fma %.1f pcs_hot %.1f\n",
              solo[0] * 50.0, solo[1] * 50.0, solo[2] * 50.0);
  std::sort(ms.begin(), ms.end());
  std::printf("pc_sampling_target: hot line %s:%d\n", kHotFile, kHotLine);
  std::printf("pc_sampling_target: loop_ms %.1f (median of %d rounds of %d x 3 launches)\n",
              ms[ms.size() / 2], rounds, iters);
  for (auto& st : s) CHECK(cudaStreamDestroy(st));
  CHECK(cudaFree(buf));
  CHECK(cudaFree(out));
  CHECK(cudaFree(hot));
  return 0;
}
