#include "steered_alloc.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>

namespace tracesmith::replay::gpu {
namespace {
// Bounds the search: each step either hits, fills the gap below the target
// or gives up. 1 GiB of fillers at most.
constexpr int kMaxSteps = 64;
constexpr uint64_t kMaxFillerBytes = uint64_t{1} << 30;
}  // namespace

StatusOr<std::unique_ptr<SteeredAllocation>> SteeredAllocation::Create(uint64_t address,
                                                                       uint64_t size) {
  std::unique_ptr<SteeredAllocation> a(new SteeredAllocation());
  uint64_t filler_bytes = 0;
  std::string tried;
  for (int step = 0; step < kMaxSteps; ++step) {
    CUdeviceptr p = 0;
    CUresult r = cuMemAlloc(&p, size);
    if (r != CUDA_SUCCESS) return Internal(StrFormat("cuMemAlloc(%" PRIu64 ") failed", size));
    if (p == address) {
      a->ptr_ = p;
      return a;
    }
    tried += StrFormat(" 0x%llx", static_cast<unsigned long long>(p));
    cuMemFree(p);
    if (p > address || address - p > kMaxFillerBytes - filler_bytes) break;
    // A free gap [p, address) below the target: fill it and ask again.
    CUdeviceptr filler = 0;
    if (cuMemAlloc(&filler, address - p) != CUDA_SUCCESS) break;
    a->fillers_.push_back(filler);
    filler_bytes += address - p;
  }
  return FailedPrecondition(
      StrFormat("cuMemAlloc(%" PRIu64 ") did not return 0x%llx either (got%s)", size,
                static_cast<unsigned long long>(address), tried.c_str()));
}

SteeredAllocation::~SteeredAllocation() {
  if (ptr_) cuMemFree(ptr_);
  for (CUdeviceptr f : fillers_) cuMemFree(f);
}

std::string HostMappingsOverlapping(uint64_t address, uint64_t size) {
  std::ifstream maps("/proc/self/maps");
  std::string line, out;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) != 2) continue;
    if (lo < address + size && address < hi) out += "\n    " + line;
  }
  return out;
}

}  // namespace tracesmith::replay::gpu
