// Launches K kernels then ends abnormally, for the "always a readable file" tests.
// Usage: crash <sigterm|abort|segv|kill|exit> [K=100]
#include <unistd.h>
#include <csignal>
#include <cstring>

#include "check.h"

__global__ void before_crash(int* x) { x[threadIdx.x] += 1; }

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "exit";
  int k = argc > 2 ? std::atoi(argv[2]) : 100;
  int* x = nullptr;
  CHECK(cudaMalloc(&x, 32 * sizeof(int)));
  for (int i = 0; i < k; ++i) before_crash<<<1, 32>>>(x);
  CHECK(cudaDeviceSynchronize());
  if (!std::strcmp(how, "kill")) {
    usleep(1500 * 1000);  // > flush period: the chunks are on disk
    kill(getpid(), SIGKILL);
  }
  if (!std::strcmp(how, "sigterm")) raise(SIGTERM);
  if (!std::strcmp(how, "abort")) std::abort();
  if (!std::strcmp(how, "segv")) *reinterpret_cast<volatile int*>(16) = 1;
  std::exit(7);
}
