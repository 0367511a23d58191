// Phases of known hardware behaviour for `profile --gpu-metrics` (issue #40,
// gpu/gpu_metrics_check.py), separated by idle gaps in which the GPU runs
// nothing:
//   copy  dram_copy: float4 grid-stride copy of 1 GiB into another 1 GiB,
//         DRAM-bound (read + write), no tensor or FMA work to speak of;
//   gemm  cublasGemmEx, bf16 inputs, fp32 accumulate, 8192^3: tensor cores;
//   fma   fma_chain: FP32 FMA chains in registers, no memory traffic, no
//         tensor work;
//   idle  the host sleeps (the gap after each phase too).
// Each phase runs about `seconds` of GPU time (default 0.4 s), or the launch
// counts in GPU_METRICS_LAUNCHES=copy,gemm,fma (same work in every run). Printed:
//   GPUMETRICS_PHASE <name> ms=<GPU time> launches=<n> [gbps=<copy bandwidth>]
//   GPUMETRICS_LOOP ms=<host time of the three busy phases>
// Usage: gpu_metrics [seconds per phase] [gap ms] [copy MiB, default 1024]
// (a small copy keeps a replay capture of dram_copy small: replay --metrics)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "check.h"

#define CUBLAS_CHECK(call)                                                           \
  do {                                                                               \
    cublasStatus_t s_ = (call);                                                      \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                               \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS %d\n", __FILE__, __LINE__, #call, s_); \
      std::exit(2);                                                                  \
    }                                                                                \
  } while (0)

__global__ void dram_copy(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

// 8 independent chains per thread keep the FMA pipe busy; nothing touches
// memory but the final store (so that the compiler keeps the chains).
__global__ void fma_chain(float* out, int iterations) {
  float a[8];
  for (int k = 0; k < 8; ++k) a[k] = threadIdx.x * 0.001f + k;
  const float x = 1.0000001f, y = 0.9999999f;
  for (int i = 0; i < iterations; ++i)
#pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = fmaf(a[k], x, y);
  float s = 0;
  for (int k = 0; k < 8; ++k) s += a[k];
  if (s == 12345.678f) out[threadIdx.x] = s;  // practically never: no store traffic
}

__global__ void fill_bf16(__nv_bfloat16* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(float(i % 7) * 0.125f);
}

struct Phase {
  cudaEvent_t begin, end;
  int launches = 0;
};

// Launches `once` until about `seconds` of GPU time went by (measured on the
// first launches), or exactly `fixed` times when that is over 0, then times the
// whole phase with events.
template <typename F>
Phase RunPhase(double seconds, int fixed, F once) {
  Phase p;
  CHECK(cudaEventCreate(&p.begin));
  CHECK(cudaEventCreate(&p.end));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  for (int i = 0; i < 4; ++i) once();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  const int n = fixed > 0 ? fixed : std::max(4, int(seconds * 1000.0 / (ms / 4)));
  CHECK(cudaEventRecord(p.begin));
  for (int i = 0; i < n; ++i) once();
  CHECK(cudaEventRecord(p.end));
  CHECK(cudaEventSynchronize(p.end));
  p.launches = n;
  return p;
}

float Ms(const Phase& p) {
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, p.begin, p.end));
  return ms;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.4;
  const int gap_ms = argc > 2 ? std::atoi(argv[2]) : 300;
  const size_t copy_bytes = size_t(argc > 3 ? std::atoi(argv[3]) : 1024) << 20;
  // GPU_METRICS_LAUNCHES=copy,gemm,fma: fixed launch counts, so that runs do the
  // same work (the cost check compares loop times).
  int fixed[3] = {0, 0, 0};
  if (const char* env = std::getenv("GPU_METRICS_LAUNCHES")) {
    if (std::sscanf(env, "%d,%d,%d", &fixed[0], &fixed[1], &fixed[2]) != 3) {
      std::fprintf(stderr, "GPU_METRICS_LAUNCHES=%s: want copy,gemm,fma launch counts\n", env);
      return 2;
    }
  }
  const size_t n4 = copy_bytes / sizeof(float4);
  float4 *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, copy_bytes));
  CHECK(cudaMalloc(&out, copy_bytes));
  CHECK(cudaMemset(in, 1, copy_bytes));
  const int dim = 8192;
  __nv_bfloat16 *A = nullptr, *B = nullptr;
  float* C = nullptr;
  CHECK(cudaMalloc(&A, size_t(dim) * dim * sizeof(__nv_bfloat16)));
  CHECK(cudaMalloc(&B, size_t(dim) * dim * sizeof(__nv_bfloat16)));
  CHECK(cudaMalloc(&C, size_t(dim) * dim * sizeof(float)));
  fill_bf16<<<1024, 256>>>(A, size_t(dim) * dim);
  fill_bf16<<<1024, 256>>>(B, size_t(dim) * dim);
  float* sink = nullptr;
  CHECK(cudaMalloc(&sink, 1024 * sizeof(float)));
  cublasHandle_t h;
  CUBLAS_CHECK(cublasCreate(&h));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceSynchronize());
  usleep(gap_ms * 1000);  // idle before the first phase too

  const auto t0 = std::chrono::steady_clock::now();
  Phase copy = RunPhase(seconds, fixed[0], [&] { dram_copy<<<sms * 8, 512>>>(in, out, n4); });
  CHECK(cudaGetLastError());
  const auto t1 = std::chrono::steady_clock::now();
  usleep(gap_ms * 1000);
  const float alpha = 1, beta = 0;
  const auto t2 = std::chrono::steady_clock::now();
  Phase gemm = RunPhase(seconds, fixed[1], [&] {
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &alpha, A, CUDA_R_16BF,
                              dim, B, CUDA_R_16BF, dim, &beta, C, CUDA_R_32F, dim,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  const auto t3 = std::chrono::steady_clock::now();
  usleep(gap_ms * 1000);
  const auto t4 = std::chrono::steady_clock::now();
  Phase fma = RunPhase(seconds, fixed[2], [&] { fma_chain<<<sms * 8, 256>>>(sink, 4096); });
  CHECK(cudaGetLastError());
  const auto t5 = std::chrono::steady_clock::now();
  usleep(gap_ms * 1000);

  const double copy_ms = Ms(copy);
  std::printf("GPUMETRICS_PHASE copy ms=%.3f launches=%d gbps=%.1f\n", copy_ms, copy.launches,
              2.0 * copy_bytes * copy.launches / (copy_ms * 1e-3) / 1e9);
  std::printf("GPUMETRICS_PHASE gemm ms=%.3f launches=%d tflops=%.1f\n", Ms(gemm), gemm.launches,
              2.0 * dim * dim * double(dim) * gemm.launches / (Ms(gemm) * 1e-3) / 1e12);
  std::printf("GPUMETRICS_PHASE fma ms=%.3f launches=%d\n", Ms(fma), fma.launches);
  using ms_d = std::chrono::duration<double, std::milli>;
  std::printf("GPUMETRICS_LOOP ms=%.3f\n",
              ms_d(t1 - t0).count() + ms_d(t3 - t2).count() + ms_d(t5 - t4).count());
  CUBLAS_CHECK(cublasDestroy(h));
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaFree(A));
  CHECK(cudaFree(B));
  CHECK(cudaFree(C));
  CHECK(cudaFree(sink));
  return 0;
}
