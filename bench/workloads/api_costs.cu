// Per-call host cost of the CUDA runtime calls a PyTorch step makes, one
// kind of call at a time: run it bare and under a profiler (or one CUPTI
// activity kind at a time, bench/cupti_floor) to see which calls a
// profiler makes slower, and by how much.
// Build: nvcc -O2 -arch=sm_90 -o api_costs api_costs.cu
// Run: ./api_costs [N=20000] [ONLY]  (ONLY: measure just the calls whose name starts with it,
// e.g. "cudaLaunchKernel": a short process, so many can be interleaved)
// Prints one line per call: api=<name> ns_per_call=<median of 5 blocks>.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess && e_ != cudaErrorNotReady) {                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                               \
    }                                                                                             \
  } while (0)

__global__ void tiny(float* data) {
  if (threadIdx.x == 0) data[blockIdx.x] += 1.0f;
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

const char* g_only = nullptr;  // argv[2]

void Measure(
    const char* name, int n, const std::function<void()>& call,
    const std::function<void()>& after_block = [] {}, int n_blocks = 6) {
  if (g_only && std::strncmp(name, g_only, std::strlen(g_only)) != 0) return;
  std::vector<double> blocks;
  for (int b = 0; b < n_blocks; ++b) {
    double t0 = Now();
    for (int i = 0; i < n; ++i) call();
    double t1 = Now();
    after_block();
    if (b > 0) blocks.push_back((t1 - t0) / n);  // block 0 warms up
  }
  std::sort(blocks.begin(), blocks.end());
  std::printf("api=%s ns_per_call=%.1f\n", name, blocks[blocks.size() / 2]);
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 20000;
  if (argc > 2) g_only = argv[2];
  float *d = nullptr, *h = nullptr;
  CHECK(cudaMalloc(&d, 1 << 20));
  CHECK(cudaMallocHost(&h, 1 << 20));
  cudaStream_t s, s2;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t ev;
  CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CHECK(cudaDeviceSynchronize());
  auto sync = [&] { CHECK(cudaDeviceSynchronize()); };

  // Launches in blocks of 256 (well under the launch queue's depth), so the
  // host cost is measured, not the GPU's rate of starting tiny kernels.
  Measure(
      "cudaLaunchKernel", 256, [&] { tiny<<<1, 32, 0, s>>>(d); }, sync, 1 + n / 256);
  Measure(
      "cudaEventRecord", n, [&] { CHECK(cudaEventRecord(ev, s)); }, sync);
  Measure(
      "cudaStreamWaitEvent", n, [&] { CHECK(cudaStreamWaitEvent(s2, ev, 0)); }, sync);
  Measure("cudaEventQuery", n, [&] { CHECK(cudaEventQuery(ev)); });
  Measure("cudaStreamQuery", n, [&] { CHECK(cudaStreamQuery(s)); });
  Measure("cudaEventSynchronize", n, [&] { CHECK(cudaEventSynchronize(ev)); });
  Measure("cudaStreamSynchronize(idle)", n, [&] { CHECK(cudaStreamSynchronize(s)); });
  Measure(
      "cudaMemcpyAsync(DtoH 4B)", n,
      [&] { CHECK(cudaMemcpyAsync(h, d, 4, cudaMemcpyDeviceToHost, s)); }, sync);
  Measure("cudaMemcpyAsync+cudaStreamSynchronize", n / 4, [&] {
    CHECK(cudaMemcpyAsync(h, d, 4, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
  });
  Measure(
      "cudaMemsetAsync", n, [&] { CHECK(cudaMemsetAsync(d, 0, 256, s)); }, sync);
  Measure("cudaGetDevice", n, [&] {
    int dev;
    CHECK(cudaGetDevice(&dev));
  });
  Measure("cudaStreamIsCapturing", n, [&] {
    cudaStreamCaptureStatus st;
    CHECK(cudaStreamIsCapturing(s, &st));
  });
  Measure("cudaDeviceSynchronize(idle)", n / 4, [&] { CHECK(cudaDeviceSynchronize()); });
  Measure(
      "cudaMallocAsync+FreeAsync", n / 4,
      [&] {
        void* p;
        CHECK(cudaMallocAsync(&p, 4096, s));
        CHECK(cudaFreeAsync(p, s));
      },
      sync);
  CHECK(cudaDeviceSynchronize());
  std::printf("api_costs: done\n");
  return 0;
}
