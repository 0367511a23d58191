// Diagnostic for same-address replay: can a fresh process place the CUDA driver's own
// virtual-address reservation where another process had it? The executable interposes
// mmap (exported with -rdynamic), logs the driver's large PROT_NONE reservations, and with
// VA_STEER=base1,base2,... moves the k-th one to base_k (MAP_FIXED_NOREPLACE). Then it
// allocates and, with VA_HINTS=a1,a2,..., asks cuMemAddressReserve for those addresses.
// Build: g++ -O1 -rdynamic va_steer_probe.cc -lcuda -o va_steer_probe
#include <cuda.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

static std::vector<uint64_t> ParseList(const char* s) {
  std::vector<uint64_t> out;
  while (s && *s) {
    char* end = nullptr;
    out.push_back(std::strtoull(s, &end, 0));
    if (end == s) break;
    s = (*end == ',' || *end == ':') ? end + 1 : end;
  }
  return out;
}

static int g_large = 0;
// Per-reservation steering: the next anonymous PROT_NONE mmap of at least g_pending_size
// bytes made while g_pending is set goes to g_pending.
static thread_local uint64_t g_pending = 0;
static thread_local size_t g_pending_size = 0;
static thread_local bool g_log_all = false;

extern "C" void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (g_log_all)
    fprintf(stderr, "  mmap hint=%p len=0x%zx prot=%d flags=0x%x fd=%d\n", addr, len, prot, flags,
            fd);
  if (g_pending && prot == PROT_NONE && fd == -1 && len >= g_pending_size) {
    long r = syscall(SYS_mmap, (void*)g_pending, len, prot, flags | MAP_FIXED_NOREPLACE, fd, off);
    fprintf(stderr, "  MMAP-TARGET hint=%p len=0x%zx -> 0x%lx (want 0x%llx)\n", addr, len, r,
            (unsigned long long)g_pending);
    g_pending = 0;
    if (r != -1 && r > 0) return (void*)r;
  }
  const bool large = prot == PROT_NONE && len >= (size_t(256) << 20) && fd == -1;
  if (large) {
    static std::vector<uint64_t> steer = ParseList(getenv("VA_STEER"));
    int k = g_large++;
    if (k < int(steer.size()) && steer[k] != 0) {
      long r = syscall(SYS_mmap, (void*)steer[k], len, prot, flags | MAP_FIXED_NOREPLACE, fd, off);
      fprintf(stderr, "MMAP-STEER k=%d hint=%p len=0x%zx flags=0x%x -> 0x%lx\n", k, addr, len,
              flags, r);
      if (r != -1 && uint64_t(r) == steer[k]) return (void*)r;
      if (r != -1) syscall(SYS_munmap, (void*)r, len);
    }
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    fprintf(stderr, "MMAP-LARGE k=%d hint=%p len=0x%zx flags=0x%x -> 0x%lx\n", k, addr, len, flags,
            r);
    return r == -1 ? MAP_FAILED : (void*)r;
  }
  long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  if (r < 0 && r > -4096) {
    errno = int(-r);
    return MAP_FAILED;
  }
  return (void*)r;
}
extern "C" void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

static void Maps(uint64_t lo, uint64_t hi) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) {
    unsigned long long a = 0, b = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &a, &b) == 2 && a < hi && lo < b && n++ < 40)
      std::printf("      map %s\n", line.c_str());
  }
}

int main() {
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  std::printf("after cuInit: %d large reservations\n", g_large);
  CUdevice dev;
  CUcontext ctx;
  cuDeviceGet(&dev, 0);
  cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  std::printf("after context: %d large reservations\n", g_large);
  const size_t sizes[] = {2u << 20, 64u << 20, 4096, 1u << 30};
  std::vector<uint64_t> got;
  for (size_t s : sizes) {
    CUdeviceptr a = 0;
    CUresult r = cuMemAlloc(&a, s);
    std::printf("ALLOC size=%zu rc=%d addr=0x%llx\n", s, int(r), (unsigned long long)a);
    got.push_back(a);
  }
  std::printf("ALLOCS");
  for (size_t i = 0; i < got.size(); ++i)
    std::printf("%s0x%llx", i == 0 ? " " : ",", (unsigned long long)got[i]);
  std::printf("\n");
  Maps(got[0] - (256u << 20), got[0] + (2ull << 30));
  for (uint64_t a : got) cuMemFree(a);
  std::vector<uint64_t> hints = ParseList(getenv("VA_HINTS"));
  for (size_t i = 0; i < hints.size() && i < 4; ++i) {
    size_t s = (sizes[i] + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    CUdeviceptr r = 0;
    CUresult rc = cuMemAddressReserve(&r, s, 0, hints[i], 0);
    std::printf("HINT 0x%llx size=%zu -> rc=%d got=0x%llx %s\n", (unsigned long long)hints[i], s,
                int(rc), (unsigned long long)r, r == hints[i] ? "SAME" : "MOVED");
  }
  // VA_TARGETS=addr:size,...: per-reservation steering, then map memory there and use it.
  const char* targets = getenv("VA_TARGETS");
  std::vector<uint64_t> flat = ParseList(targets);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  // VA_TARGETS=addr:size:align,... (align 0: the driver's choice); VA_NOSTEER=1: log only.
  const bool steer = getenv("VA_NOSTEER") == nullptr;
  for (size_t i = 0; i + 2 < flat.size(); i += 3) {
    uint64_t want = flat[i];
    size_t s = (flat[i + 1] + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    size_t align = flat[i + 2];
    g_pending = steer ? want : 0;
    g_pending_size = s;
    g_log_all = true;
    CUdeviceptr r = 0;
    CUresult rc = cuMemAddressReserve(&r, s, align, want, 0);
    g_log_all = false;
    g_pending = 0;
    std::printf("TARGET 0x%llx size=0x%zx align=0x%zx -> rc=%d got=0x%llx %s\n",
                (unsigned long long)want, s, align, int(rc), (unsigned long long)r,
                r == want ? "SAME" : "MOVED");
    if (rc != CUDA_SUCCESS) continue;
    CUmemGenericAllocationHandle h;
    CUresult c1 = cuMemCreate(&h, s, &prop, 0);
    CUresult c2 = c1 == CUDA_SUCCESS ? cuMemMap(r, s, 0, h, 0) : c1;
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult c3 = c2 == CUDA_SUCCESS ? cuMemSetAccess(r, s, &acc, 1) : c2;
    CUresult c4 = c3 == CUDA_SUCCESS ? cuMemsetD8(r, 0x5a, s) : c3;
    unsigned char b[16] = {};
    CUresult c5 = c4 == CUDA_SUCCESS ? cuMemcpyDtoH(b, r + s - 16, 16) : c4;
    std::printf("  map+use: create=%d map=%d access=%d memset=%d copy=%d byte=0x%x\n", int(c1),
                int(c2), int(c3), int(c4), int(c5), b[15]);
  }
  std::printf("total large reservations: %d\n", g_large);
  return 0;
}
