// More programs `profile --pc-sampling` is checked on (gpu/pc_sampling_more_check.py, issue #39),
// one per mode, built with -lineinfo:
//   hang   a kernel (pcs_spin, from launch_spin) waits for a flag the host never sets, after a
//          few ordinary kernels; the host then synchronizes: the program never ends on its own
//          (profile --kernel-timeout ... --on-kernel-timeout exit ends it);
//   long   the same kernel spins for SECONDS (argument, default 3) on the SM clock, then ends:
//          a long kernel, not a hang; the program ends normally;
//   graph  pcs_hot launched only as the kernel nodes of a CUDA graph (captured from a stream in
//          capture_hot, launched 200 times from launch_graph), pcs_fma launched directly from
//          launch_fma. With host stacks the graph's kernels are named by capture_hot (the
//          code that put them in the graph), not launch_graph.
// Prints "pc_sampling_more: spin line FILE:LINE" first (flushed: the hang never returns).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "check.h"
#include "pc_sampling_kernels.cuh"

// clang-format off
__global__ void pcs_spin(volatile int* flag, long long cycles) {
  const long long t0 = clock64();
  while (*flag == 0 && (cycles == 0 || clock64() - t0 < cycles)) { }
}
constexpr int kSpinLine = __LINE__ - 2;
// clang-format on

#define PCS_KEEP_FRAME() asm volatile("" ::: "memory")
__attribute__((noinline)) void launch_spin(volatile int* flag, long long cycles, cudaStream_t s) {
  pcs_spin<<<4, 32, 0, s>>>(flag, cycles);
  PCS_KEEP_FRAME();
}
__attribute__((noinline)) void launch_hot(int blocks, cudaStream_t s, unsigned* out) {
  pcs_hot<<<blocks, 256, 0, s>>>(out, 40000);
  PCS_KEEP_FRAME();
}
__attribute__((noinline)) void launch_fma(int blocks, cudaStream_t s, float* out) {
  pcs_fma<<<blocks, 256, 0, s>>>(out, 100000, 1.0001f, 0.5f);
  PCS_KEEP_FRAME();
}
__attribute__((noinline)) cudaGraph_t capture_hot(cudaStream_t s, unsigned* hot, int blocks) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 4; ++i) pcs_hot<<<blocks, 256, 0, s>>>(hot, 40000);
  CHECK(cudaStreamEndCapture(s, &graph));
  return graph;
}

__attribute__((noinline)) void launch_graph(cudaGraphExec_t g, cudaStream_t s) {
  CHECK(cudaGraphLaunch(g, s));
  PCS_KEEP_FRAME();
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "hang";
  std::printf("pc_sampling_more: spin line %s:%d\n", __FILE__, kSpinLine);
  std::fflush(stdout);
  int sms = 0, clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const int blocks = sms * 4;
  unsigned* hot = nullptr;
  float* out = nullptr;
  int* flag = nullptr;
  CHECK(cudaMalloc(&hot, size_t(blocks) * 256 * sizeof(unsigned)));
  CHECK(cudaMalloc(&out, size_t(blocks) * 256 * sizeof(float)));
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMemset(flag, 0, sizeof(int)));
  cudaStream_t s[2];
  for (auto& st : s) CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  if (!std::strcmp(mode, "graph")) {
    cudaGraph_t graph = capture_hot(s[0], hot, blocks);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const int launches = 200;
    for (int i = 0; i < launches; ++i) {
      launch_graph(exec, s[0]);
      launch_fma(blocks, s[1], out);
    }
    CHECK(cudaDeviceSynchronize());
    std::printf("pc_sampling_more: graph launches %d x 4 pcs_hot nodes, pcs_fma launches %d\n",
                launches, launches);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  } else {
    for (int i = 0; i < 20; ++i) launch_hot(blocks, s[0], hot);  // ordinary kernels first
    CHECK(cudaDeviceSynchronize());
    const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
    const long long cycles =
        !std::strcmp(mode, "long") ? (long long)(seconds * clock_khz * 1e3) : 0;
    std::printf(
        "pc_sampling_more: %s: launching pcs_spin (%lld cycles; 0: until a flag no one "
        "sets)\n",
        mode, cycles);
    std::fflush(stdout);
    launch_spin(flag, cycles, s[1]);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());  // "hang": never returns
    for (int i = 0; i < 5; ++i) launch_hot(blocks, s[0], hot);
    CHECK(cudaDeviceSynchronize());
    std::printf("pc_sampling_more: %s: done\n", mode);
  }
  for (auto& st : s) CHECK(cudaStreamDestroy(st));
  CHECK(cudaFree(hot));
  CHECK(cudaFree(out));
  CHECK(cudaFree(flag));
  return 0;
}
