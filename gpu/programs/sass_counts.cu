// Kernels whose executed instruction counts are known in advance, for
// `profile --sass-counts` (gpu/sass_counts_check.py, issue #39 item 5). Built
// with -lineinfo.
//
//   sass_counts counts LAUNCHES   sc_loop<<<kBlocks, kThreads>>>(out, kIters) LAUNCHES times
//                                 and sc_branch<<<kBlocks, kThreads>>> once: per launch of
//                                 sc_loop, every instruction of its loop body runs kIters times
//                                 in each of its kBlocks * kThreads / 32 warps, all 32 threads
//                                 active; in sc_branch, the even blocks' warps run the loop of
//                                 line `even` kEvenIters times, the odd blocks' that of line
//                                 `odd` kOddIters times (warp-uniform branches).
//   sass_counts time LAUNCHES     sc_loop once (the first launch: CUPTI patches it there), then
//                                 LAUNCHES more with kTimeIters iterations, timed by events.
// Prints "sass_counts: lines FILE body=L even=L odd=L", the grid, and in `time` mode
// "sass_counts: first_ms X loop_ms Y".
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

constexpr int kBlocks = 64, kThreads = 128;  // 256 warps
constexpr int kIters = 1000, kEvenIters = 200, kOddIters = 50, kTimeIters = 200000;

// clang-format off
__global__ void sc_loop(float* out, int iters) {
  float a = threadIdx.x * 0.5f, b = 1.0001f, c = 0.999f;
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, b, c);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
constexpr int kBodyLine = __LINE__ - 4;

__global__ void sc_branch(float* out, int even_iters, int odd_iters) {
  float a = threadIdx.x * 0.25f;
  int k = threadIdx.x;
  if (blockIdx.x % 2 == 0) {
#pragma unroll 1
    for (int i = 0; i < even_iters; ++i) {
      a = fmaf(a, 1.0001f, 0.5f);
    }
  } else {
#pragma unroll 1
    for (int i = 0; i < odd_iters; ++i) {
      k = k * 3 + 1;
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + float(k);
}
constexpr int kEvenLine = __LINE__ - 10;
constexpr int kOddLine = __LINE__ - 6;
// clang-format on

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "counts";
  const int launches = argc > 2 ? std::atoi(argv[2]) : 3;
  if (launches < 1 || (std::strcmp(mode, "counts") != 0 && std::strcmp(mode, "time") != 0)) {
    std::fprintf(stderr, "usage: sass_counts counts|time LAUNCHES\n");
    return 2;
  }
  std::printf("sass_counts: lines %s body=%d even=%d odd=%d\n", __FILE__, kBodyLine, kEvenLine,
              kOddLine);
  std::printf("sass_counts: grid %d x %d, iters %d, even %d, odd %d, launches %d\n", kBlocks,
              kThreads, kIters, kEvenIters, kOddIters, launches);
  std::fflush(stdout);
  float* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(float) * kBlocks * kThreads));
  if (std::strcmp(mode, "counts") == 0) {
    for (int i = 0; i < launches; ++i) sc_loop<<<kBlocks, kThreads>>>(out, kIters);
    sc_branch<<<kBlocks, kThreads>>>(out, kEvenIters, kOddIters);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  } else {
    cudaEvent_t e0, e1, e2;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventCreate(&e2));
    CHECK(cudaEventRecord(e0));
    sc_loop<<<kBlocks, kThreads>>>(out, kTimeIters);
    CHECK(cudaEventRecord(e1));
    for (int i = 0; i < launches; ++i) sc_loop<<<kBlocks, kThreads>>>(out, kTimeIters);
    CHECK(cudaEventRecord(e2));
    CHECK(cudaGetLastError());
    CHECK(cudaEventSynchronize(e2));
    float first = 0, loop = 0;
    CHECK(cudaEventElapsedTime(&first, e0, e1));
    CHECK(cudaEventElapsedTime(&loop, e1, e2));
    std::printf("sass_counts: first_ms %.3f loop_ms %.3f\n", first, loop);
  }
  CHECK(cudaFree(out));
  std::printf("sass_counts: done\n");
  return 0;
}
