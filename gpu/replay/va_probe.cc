// Diagnostic for same-address replay: where does cuMemAddressReserve put a
// reservation asked for at a host-free address? Prints the hint, the result
// and the host mappings near it. Build: g++ -O1 va_probe.cc -lcuda.
#include <cuda.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

static void Maps(uint64_t lo, uint64_t hi) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long a = 0, b = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &a, &b) == 2 && a < hi && lo < b)
      std::printf("      map %s\n", line.c_str());
  }
}

static void Try(const char* what, uint64_t hint, size_t size, size_t align) {
  CUdeviceptr got = 0;
  CUresult r = cuMemAddressReserve(&got, size, align, CUdeviceptr(hint), 0);
  std::printf("  %-28s hint=0x%llx size=%zuMiB align=%zu -> rc=%d got=0x%llx delta=%lld MiB\n",
              what, (unsigned long long)hint, size >> 20, align, int(r), (unsigned long long)got,
              (long long)(int64_t(got) - int64_t(hint)) / (1 << 20));
  if (r == CUDA_SUCCESS) {
    Maps(hint - (64u << 20), hint + (64u << 20));
    cuMemAddressFree(got, size);
  }
}

int main() {
  const size_t M = 1u << 20;
  // A host-free hint taken before CUDA starts.
  void* early =
      mmap(nullptr, 512 * M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  munmap(early, 512 * M);
  uint64_t early_hint = ((uint64_t)early + 2 * M - 1) / (2 * M) * (2 * M) + 128 * M;
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  CUdevice dev;
  CUcontext ctx;
  cuDeviceGet(&dev, 0);
  cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  CUdeviceptr a = 0;
  cuMemAlloc(&a, 2 * M);
  std::printf("first cuMemAlloc(2MiB) = 0x%llx\n", (unsigned long long)a);
  CUdeviceptr any = 0;
  cuMemAddressReserve(&any, 2 * M, 0, 0, 0);
  std::printf("reserve without hint = 0x%llx\n", (unsigned long long)any);
  Maps(any - 64 * M, any + 64 * M);
  cuMemAddressFree(any, 2 * M);
  Try("early host-free hint", early_hint, 2 * M, 0);
  Try("early hint, align 2MiB", early_hint, 2 * M, 2 * M);
  Try("early hint, 32MiB", early_hint, 32 * M, 0);
  void* late =
      mmap(nullptr, 512 * M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  munmap(late, 512 * M);
  uint64_t late_hint = ((uint64_t)late + 2 * M - 1) / (2 * M) * (2 * M) + 128 * M;
  Try("late host-free hint", late_hint, 2 * M, 0);
  Try("where no-hint went (freed)", any, 2 * M, 0);
  Try("no-hint address + 64MiB", any + 64 * M, 2 * M, 0);
  Try("no-hint address - 64MiB", any - 64 * M, 2 * M, 0);
  Try("0x7f0000000000", 0x7f0000000000ull, 2 * M, 0);
  Try("0x600000000000", 0x600000000000ull, 2 * M, 0);
  return 0;
}
