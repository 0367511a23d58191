// T host threads, each launching K kernels on its own stream.
// Usage: multi_thread [T=8] [K=2000]
// Expected trace: exactly T*K kernels "thread_kernel", T distinct streams and
// T distinct launching thread ids in the cudaLaunchKernel API rows.
#include <thread>
#include <vector>

#include "check.h"

__global__ void thread_kernel(int* x, int t) { x[t * 32 + threadIdx.x] += 1; }

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  int per = argc > 2 ? std::atoi(argv[2]) : 2000;
  int* x = nullptr;
  CHECK(cudaMalloc(&x, threads * 32 * sizeof(int)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      cudaStream_t s;
      CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      for (int i = 0; i < per; ++i) thread_kernel<<<1, 32, 0, s>>>(x, t);
      CHECK(cudaGetLastError());
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& th : pool) th.join();
  CHECK(cudaFree(x));
  std::printf("multi_thread: %d x %d\n", threads, per);
  return 0;
}
