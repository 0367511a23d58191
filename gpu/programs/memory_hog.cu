// Holds most of the GPU's memory so that another process runs short of it
// (the replay's out-of-memory check, scripts/gpu-replay-check.sh).
// Usage: memory_hog MARGIN_MIB SECONDS
// Leaves free what this process's own CUDA context takes plus MARGIN_MIB, so
// that another process can still create its context and allocate about
// MARGIN_MIB; holds it for SECONDS (or until killed). Prints
// "memory_hog: holding N MiB, M MiB free (a context takes C MiB)" once the
// memory is held.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: memory_hog MARGIN_MIB SECONDS\n");
    return 1;
  }
  const size_t margin = size_t(std::atoll(argv[1])) << 20;
  const int seconds = std::atoi(argv[2]);
  CHECK(cudaFree(nullptr));  // this process's context
  size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total));
  const size_t context = total - free_bytes;  // an otherwise idle GPU: this context
  const size_t keep_free = context + margin;
  if (free_bytes <= keep_free) {
    std::fprintf(stderr, "memory_hog: only %zu MiB free\n", free_bytes >> 20);
    return 1;
  }
  size_t want = free_bytes - keep_free, held = 0;
  std::vector<void*> blocks;
  for (size_t chunk = size_t(1) << 30; want > 0 && chunk >= (size_t(2) << 20);) {
    const size_t n = want < chunk ? (want / (size_t(2) << 20)) * (size_t(2) << 20) : chunk;
    void* p = nullptr;
    if (n == 0) break;
    if (cudaMalloc(&p, n) != cudaSuccess) {
      (void)cudaGetLastError();
      chunk /= 2;
      continue;
    }
    blocks.push_back(p);
    held += n;
    want -= n;
  }
  CHECK(cudaMemGetInfo(&free_bytes, &total));
  std::printf("memory_hog: holding %zu MiB, %zu MiB free (a context takes %zu MiB)\n", held >> 20,
              free_bytes >> 20, context >> 20);
  std::fflush(stdout);
  sleep(unsigned(seconds));
  for (void* p : blocks) CHECK(cudaFree(p));
  return 0;
}
