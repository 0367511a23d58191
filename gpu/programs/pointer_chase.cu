// Kernels that reach memory through pointers stored in device memory, not
// through their parameters: what `--replay-memory reachable` must capture.
// Usage: pointer_chase gather|list|gemm
//   gather: one launch of gather_ptrs(table, out, n): `table` is a device
//           array of 4 pointers to separately cudaMalloc'd 4 MiB buffers;
//           out[i] = sum of buffer k's element i. Parameters reach 2
//           allocations (table, out); pointers in table reach 4 more.
//   list:   one launch of walk_list(head, out): 8 nodes, each its own 2 MiB
//           cudaMalloc, linked by `next`; out[k] = node k's value.
//           Parameters reach 2 (the head node, out); pointers reach 7 nodes,
//           the last 7 hops from a parameter.
//   gemm:   one cublasSgemmBatched of 4 64x64 products, its Aarray, Barray
//           and Carray device arrays of pointers to 12 separately
//           allocated matrices.
// Each mode checks the result on the host and prints "POINTER_CHASE <mode> OK".
#include <cublas_v2.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "check.h"

namespace {

constexpr int kBuffers = 4;
constexpr int kElems = 1 << 20;  // 4 MiB of floats per buffer

__global__ void gather_ptrs(const float* const* table, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0;
  for (int k = 0; k < kBuffers; ++k) s += table[k][i];
  out[i] = s;
}

struct Node {
  float value;
  const Node* next;
};

__global__ void walk_list(const Node* head, float* out) {
  int k = 0;
  for (const Node* n = head; n; n = n->next) out[k++] = n->value;
}

int Gather() {
  std::vector<float*> bufs(kBuffers);
  std::vector<float> host(kElems);
  for (int k = 0; k < kBuffers; ++k) {
    for (int i = 0; i < kElems; ++i) host[i] = float(k + 1) * 0.5f + float(i % 7);
    CHECK(cudaMalloc(&bufs[k], kElems * sizeof(float)));
    CHECK(cudaMemcpy(bufs[k], host.data(), kElems * sizeof(float), cudaMemcpyHostToDevice));
  }
  float** table = nullptr;
  float* out = nullptr;
  CHECK(cudaMalloc(&table, kBuffers * sizeof(float*)));
  CHECK(cudaMalloc(&out, kElems * sizeof(float)));
  CHECK(cudaMemcpy(table, bufs.data(), kBuffers * sizeof(float*), cudaMemcpyHostToDevice));
  gather_ptrs<<<kElems / 256, 256>>>(table, out, kElems);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host.data(), out, kElems * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kElems; ++i) {
    const float want = 5.0f + 4.0f * float(i % 7);  // (1+2+3+4) * 0.5 + 4 * (i % 7)
    if (host[i] != want) {
      std::fprintf(stderr, "gather: out[%d] = %g, expected %g\n", i, host[i], want);
      return 1;
    }
  }
  std::printf("POINTER_CHASE gather OK: %d buffers reached through a pointer table\n", kBuffers);
  return 0;
}

int List() {
  constexpr int kNodes = 8;
  std::vector<Node*> nodes(kNodes);
  for (auto& n : nodes) CHECK(cudaMalloc(&n, 2 << 20));  // one node per 2 MiB allocation
  for (int k = 0; k < kNodes; ++k) {
    Node h{float(k) * 1.5f + 1.0f, k + 1 < kNodes ? nodes[k + 1] : nullptr};
    CHECK(cudaMemcpy(nodes[k], &h, sizeof(h), cudaMemcpyHostToDevice));
  }
  float* out = nullptr;
  CHECK(cudaMalloc(&out, kNodes * sizeof(float)));
  CHECK(cudaMemset(out, 0, kNodes * sizeof(float)));
  walk_list<<<1, 1>>>(nodes[0], out);
  CHECK(cudaGetLastError());
  float host[kNodes];
  CHECK(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
  for (int k = 0; k < kNodes; ++k)
    if (host[k] != float(k) * 1.5f + 1.0f) {
      std::fprintf(stderr, "list: out[%d] = %g\n", k, host[k]);
      return 1;
    }
  std::printf("POINTER_CHASE list OK: %d nodes in %d allocations\n", kNodes, kNodes);
  return 0;
}

int Gemm() {
  constexpr int kBatch = 4, kN = 64;
  const size_t bytes = kN * kN * sizeof(float);
  std::vector<float*> a(kBatch), b(kBatch), c(kBatch);
  std::vector<float> ha(kN * kN), hb(kN * kN);
  for (int k = 0; k < kBatch; ++k) {
    for (int i = 0; i < kN * kN; ++i) {
      ha[i] = float((i * 7 + k) % 13) * 0.25f;
      hb[i] = float((i * 3 + 2 * k) % 11) * 0.5f;
    }
    CHECK(cudaMalloc(&a[k], bytes));
    CHECK(cudaMalloc(&b[k], bytes));
    CHECK(cudaMalloc(&c[k], bytes));
    CHECK(cudaMemcpy(a[k], ha.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b[k], hb.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(c[k], 0, bytes));
  }
  float **da = nullptr, **db = nullptr, **dc = nullptr;
  CHECK(cudaMalloc(&da, kBatch * sizeof(float*)));
  CHECK(cudaMalloc(&db, kBatch * sizeof(float*)));
  CHECK(cudaMalloc(&dc, kBatch * sizeof(float*)));
  CHECK(cudaMemcpy(da, a.data(), kBatch * sizeof(float*), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), kBatch * sizeof(float*), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c.data(), kBatch * sizeof(float*), cudaMemcpyHostToDevice));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "gemm: cublasCreate failed\n");
    return 2;
  }
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, da, kN, db,
                                         kN, &zero, dc, kN, kBatch);
  CHECK(cudaDeviceSynchronize());
  if (st != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "gemm: cublasSgemmBatched failed: %d\n", int(st));
    return 2;
  }
  // Check one element of each product (column-major: C = A * B).
  std::vector<float> hc(kN * kN);
  for (int k = 0; k < kBatch; ++k) {
    for (int i = 0; i < kN * kN; ++i) {
      ha[i] = float((i * 7 + k) % 13) * 0.25f;
      hb[i] = float((i * 3 + 2 * k) % 11) * 0.5f;
    }
    CHECK(cudaMemcpy(hc.data(), c[k], bytes, cudaMemcpyDeviceToHost));
    const int row = 5, col = 9;
    double want = 0;
    for (int j = 0; j < kN; ++j) want += double(ha[j * kN + row]) * double(hb[col * kN + j]);
    if (std::fabs(hc[col * kN + row] - want) > 1e-3 * std::fabs(want) + 1e-3) {
      std::fprintf(stderr, "gemm: C%d[%d,%d] = %g, expected %g\n", k, row, col, hc[col * kN + row],
                   want);
      return 1;
    }
  }
  cublasDestroy(h);
  std::printf("POINTER_CHASE gemm OK: %d products through Aarray/Barray/Carray\n", kBatch);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (!std::strcmp(mode, "gather")) return Gather();
  if (!std::strcmp(mode, "list")) return List();
  if (!std::strcmp(mode, "gemm")) return Gemm();
  std::fprintf(stderr, "usage: %s gather|list|gemm\n", argv[0]);
  return 2;
}
