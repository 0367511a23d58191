// The program `profile --pc-sampling` is checked on (gpu/pc_sampling_check.py,
// issue #39): three kernels of known behaviour, built with -lineinfo, launched
// ROUNDS x ITERS times on two streams so that they run concurrently:
//   pcs_mem  scattered global loads (memory-bound: memory stall reasons),
//   pcs_fma  one dependent FMA chain (compute-bound: fixed-latency dependency),
//   pcs_hot  a loop on one source line (HOT_LINE, printed): its samples land there.
// Prints "pc_sampling_target: hot line FILE:LINE" and the timed loop's wall time
// ("loop_ms N", the median round), which the check compares with and without sampling, and
// each kernel's time per launch when it runs alone ("solo_us"), the reference for sample shares.
// Each kernel is launched from its own host function (launch_mem, launch_fma, launch_hot: the
// call sites the samples are joined to). Last, pcs_hot from two more functions in two phases
// 100 ms apart: launch_narrow (a quarter of the SMs) and launch_wide (every SM, 4 blocks
// each), equal launches, so samples per GPU-nanosecond differ ~4x between the two sites:
// sharing samples by GPU time would be wrong, joining them by time window right.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "check.h"
#include "pc_sampling_kernels.cuh"

// The call sites (kept out of line, so each is a frame of its launches' stacks; the empty asm
// after the launch keeps it from being a tail call, which would leave no frame either).
#define PCS_KEEP_FRAME() asm volatile("" ::: "memory")
__attribute__((noinline)) void launch_mem(int blocks, cudaStream_t s, const float* buf,
                                          unsigned mask, float* out) {
  pcs_mem<<<blocks, 256, 0, s>>>(buf, mask, 512, out);
  PCS_KEEP_FRAME();
}
__attribute__((noinline)) void launch_fma(int blocks, cudaStream_t s, float* out) {
  pcs_fma<<<blocks, 256, 0, s>>>(out, 100000, 1.0001f, 0.5f);
  PCS_KEEP_FRAME();
}
__attribute__((noinline)) void launch_hot(int blocks, cudaStream_t s, unsigned* out) {
  pcs_hot<<<blocks, 256, 0, s>>>(out, 40000);
  PCS_KEEP_FRAME();
}
// (Each body differs, so that the compiler cannot fold them into one function.)
__attribute__((noinline)) void launch_narrow(int sms, cudaStream_t s, unsigned* out) {
  pcs_hot<<<std::max(1, sms / 4), 256, 0, s>>>(out, 40000);
  PCS_KEEP_FRAME();
}
__attribute__((noinline)) void launch_wide(int sms, cudaStream_t s, unsigned* out) {
  pcs_hot<<<sms * 4, 256, 0, s>>>(out, 40000);
  PCS_KEEP_FRAME();
}

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
      launch_mem(blocks, s[0], buf, kMask, out);
      launch_fma(blocks, s[1], out + blocks * kThreads);
      launch_hot(blocks, s[i % 2], hot);
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
      if (k == 0) launch_mem(blocks, s[0], buf, kMask, out);
      if (k == 1) launch_fma(blocks, s[0], out + blocks * kThreads);
      if (k == 2) launch_hot(blocks, s[0], hot);
    }
    CHECK(cudaEventRecord(e1, s[0]));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaEventElapsedTime(&solo[k], e0, e1));
  }
  std::printf("pc_sampling_target: solo_us pcs_mem %.1f pcs_fma %.1f pcs_hot %.1f\n",
              solo[0] * 50.0, solo[1] * 50.0, solo[2] * 50.0);
  // The two-site phases: 100 ms of quiet before each, so no drain window (20 ms) holds both.
  const int sites_launches = 150;
  for (int phase = 0; phase < 2; ++phase) {
    CHECK(cudaDeviceSynchronize());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (int i = 0; i < sites_launches; ++i) {
      if (phase == 0) launch_narrow(sms, s[0], hot);
      if (phase == 1) launch_wide(sms, s[0], hot);
    }
    CHECK(cudaGetLastError());
  }
  CHECK(cudaDeviceSynchronize());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::printf("pc_sampling_target: sites narrow %d wide %d blocks, %d launches each, sms %d\n",
              std::max(1, sms / 4), blocks, sites_launches, sms);
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
