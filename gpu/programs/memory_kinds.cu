// Known allocations of every kind, for the memory rows (issue #16): each
// call from its own named function, so the test can check the host stack of
// every row. Expected (MEMORY2 rows unless said):
//   ts_cuda_malloc     4 cudaMalloc (1 MiB, 3 MiB, 5000 B, 256 KiB)   alloc, device
//   ts_cuda_free       4 cudaFree of them                             free, device
//   ts_malloc_async    2 cudaMallocAsync on a stream (2 MiB, 40000 B) alloc, device, async
//   ts_free_async      2 cudaFreeAsync of them                        free, device, async
//   ts_malloc_managed  1 cudaMallocManaged (4 MiB)                    alloc, managed
//   ts_free_managed    1 cudaFree of it                               free, managed
//   ts_host_alloc      1 cudaHostAlloc (1 MiB)                        alloc, pinned
//   ts_free_host       1 cudaFreeHost of it                           free, pinned
//   VMM (driver-callback rows, G = the minimum granularity):
//   ts_vmm_reserve     1 cuMemAddressReserve of 4G
//   ts_vmm_create      2 cuMemCreate of G and 3G on device 0
//   ts_vmm_map         2 cuMemMap at the reservation and reservation + G
//   (cuMemSetAccess on all 4G: no row)
//   ts_vmm_unmap       2 cuMemUnmap of them
//   ts_vmm_release     2 cuMemRelease of the handles
//   ts_vmm_unreserve   1 cuMemAddressFree of the reservation
// Prints "memory_kinds: granularity G" and "memory_kinds: used at start U"
// (cudaMemGetInfo total - free once the context exists, before any allocation,
// and how long that call took).
#include <cuda.h>

#include <chrono>

#include "check.h"

#define NOINLINE extern "C" __attribute__((noinline))

constexpr size_t kDeviceSizes[] = {1 << 20, 3 << 20, 5000, 256 << 10};
constexpr int kDevice = sizeof(kDeviceSizes) / sizeof(kDeviceSizes[0]);
constexpr size_t kAsyncSizes[] = {2 << 20, 40000};
constexpr size_t kManagedBytes = 4 << 20;
constexpr size_t kHostBytes = 1 << 20;

__global__ void touch(char* p, size_t n) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) p[i] = char(i);
}

NOINLINE void ts_cuda_malloc(void** ptrs) {
  for (int i = 0; i < kDevice; ++i) CHECK(cudaMalloc(&ptrs[i], kDeviceSizes[i]));
}
NOINLINE void ts_cuda_free(void** ptrs) {
  for (int i = 0; i < kDevice; ++i) CHECK(cudaFree(ptrs[i]));
}
NOINLINE void ts_malloc_async(void** ptrs, cudaStream_t s) {
  for (int i = 0; i < 2; ++i) CHECK(cudaMallocAsync(&ptrs[i], kAsyncSizes[i], s));
}
NOINLINE void ts_free_async(void** ptrs, cudaStream_t s) {
  for (int i = 0; i < 2; ++i) CHECK(cudaFreeAsync(ptrs[i], s));
}
NOINLINE void ts_malloc_managed(void** p) { CHECK(cudaMallocManaged(p, kManagedBytes)); }
NOINLINE void ts_free_managed(void* p) { CHECK(cudaFree(p)); }
NOINLINE void ts_host_alloc(void** p) { CHECK(cudaHostAlloc(p, kHostBytes, cudaHostAllocDefault)); }
NOINLINE void ts_free_host(void* p) { CHECK(cudaFreeHost(p)); }

NOINLINE void ts_vmm_reserve(CUdeviceptr* va, size_t bytes) {
  CU_CHECK(cuMemAddressReserve(va, bytes, 0, 0, 0));
}
NOINLINE void ts_vmm_create(CUmemGenericAllocationHandle* h, size_t bytes,
                            const CUmemAllocationProp* prop) {
  CU_CHECK(cuMemCreate(h, bytes, prop, 0));
}
NOINLINE void ts_vmm_map(CUdeviceptr va, size_t bytes, CUmemGenericAllocationHandle h) {
  CU_CHECK(cuMemMap(va, bytes, 0, h, 0));
}
NOINLINE void ts_vmm_unmap(CUdeviceptr va, size_t bytes) { CU_CHECK(cuMemUnmap(va, bytes)); }
NOINLINE void ts_vmm_release(CUmemGenericAllocationHandle h) { CU_CHECK(cuMemRelease(h)); }
NOINLINE void ts_vmm_unreserve(CUdeviceptr va, size_t bytes) {
  CU_CHECK(cuMemAddressFree(va, bytes));
}

int main() {
  CHECK(cudaSetDevice(0));  // creates the primary context
  size_t free_bytes = 0, total_bytes = 0;
  auto t0 = std::chrono::steady_clock::now();
  CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  auto t1 = std::chrono::steady_clock::now();
  std::printf("memory_kinds: used at start %zu\n", total_bytes - free_bytes);
  std::printf("memory_kinds: cudaMemGetInfo took %.1f us\n",
              std::chrono::duration<double, std::micro>(t1 - t0).count());

  void* dev[kDevice] = {};
  ts_cuda_malloc(dev);
  touch<<<1, 128>>>(static_cast<char*>(dev[0]), kDeviceSizes[0]);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  ts_cuda_free(dev);

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* async[2] = {};
  ts_malloc_async(async, s);
  touch<<<1, 128, 0, s>>>(static_cast<char*>(async[0]), kAsyncSizes[0]);
  CHECK(cudaGetLastError());
  ts_free_async(async, s);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));

  void* managed = nullptr;
  ts_malloc_managed(&managed);
  touch<<<1, 128>>>(static_cast<char*>(managed), 4096);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  ts_free_managed(managed);

  void* host = nullptr;
  ts_host_alloc(&host);
  static_cast<char*>(host)[0] = 1;
  ts_free_host(host);

  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t g = 0;
  CU_CHECK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  std::printf("memory_kinds: granularity %zu\n", g);
  CUdeviceptr va = 0;
  ts_vmm_reserve(&va, 4 * g);
  CUmemGenericAllocationHandle h[2] = {};
  ts_vmm_create(&h[0], g, &prop);
  ts_vmm_create(&h[1], 3 * g, &prop);
  ts_vmm_map(va, g, h[0]);
  ts_vmm_map(va + g, 3 * g, h[1]);
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_CHECK(cuMemSetAccess(va, 4 * g, &access, 1));
  touch<<<1, 128>>>(reinterpret_cast<char*>(va), 4 * g);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  ts_vmm_unmap(va, g);
  ts_vmm_unmap(va + g, 3 * g);
  ts_vmm_release(h[0]);
  ts_vmm_release(h[1]);
  ts_vmm_unreserve(va, 4 * g);
  std::printf("memory_kinds: vmm reserve 0x%llx handles 0x%llx 0x%llx\n",
              static_cast<unsigned long long>(va), static_cast<unsigned long long>(h[0]),
              static_cast<unsigned long long>(h[1]));
  std::printf("memory_kinds: done\n");
  return 0;
}
