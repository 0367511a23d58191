// The three kernels of known behaviour that GPU instruction sampling is checked on (issue #39),
// shared by pc_sampling_probe.cu (the CUPTI probe) and pc_sampling_target.cu (the program
// `profile --pc-sampling` is checked on):
//   pcs_mem  every lane loads its own 32-byte sector, scattered (memory-bound),
//   pcs_fma  one dependent FMA chain per thread (compute-bound: fixed-latency dependency),
//   pcs_hot  a loop on one source line, kHotLine of kHotFile (its samples land there).
#pragma once

__global__ void pcs_mem(const float* __restrict__ buf, unsigned mask, int iters, float* out) {
  unsigned idx = (blockIdx.x * blockDim.x + threadIdx.x) * 33u;
  float acc = 0.f;
  for (int i = 0; i < iters; ++i) {
    acc += buf[idx & mask];
    idx += 2654435761u;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

__global__ void pcs_fma(float* out, int iters, float a, float b) {
  float x = threadIdx.x * 1e-3f;
  for (int i = 0; i < iters; ++i) x = fmaf(x, a, b);
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

// clang-format off
__global__ void pcs_hot(unsigned* out, int iters) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < iters; ++i) { x = x * 1664525u + 1013904223u; x ^= x >> 13; }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}
constexpr int kHotLine = __LINE__ - 3;
constexpr const char* kHotFile = __FILE__;
// clang-format on
