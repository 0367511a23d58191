// A CUDA graph for replay capture (#15 item 2), built by stream capture on
// two streams (fork/join through events):
//   s1: fill_values(a <- in)            kernel
//   s2: memset(b, 7)                     memset node, after fill_values (fork)
//   s1: memcpy(c <- a)                   device-to-device memcpy node
//   s2: chase_table(out <- table, b)     pointer chasing: table holds pointers to
//                                        4 separately allocated buffers
//   s1: combine_outputs(c += out)        after the join
// Instantiated once and launched 3 times; between launches the inputs change
// (host-to-device copies outside the graph: `in` and the first pointed-to
// buffer). Each launch's results are checked on the host. Prints
// "GRAPH_REPLAY launch N OK" per launch and "GRAPH_REPLAY OK"; exits 1 when
// a result is wrong. Usage: graph_replay
// Then a second graph (memset + fill_values) captured on a stream created
// after those launches, launched once ("GRAPH_REPLAY second capture OK").
// Launch indices under `tracesmith profile --replay-capture`: the 3 kernels
// launched into the capture count 0..2 (not recorded: their stream is
// capturing), the graph launches are 3, 4 and 5; the second capture's kernel
// is 6 (not recorded), its graph launch 7.
#include <cstdint>
#include <vector>

#include "check.h"

constexpr int kN = 1 << 18;      // floats per buffer (1 MiB)
constexpr int kTables = 4;       // buffers reached through the table
constexpr int kPerTable = 1024;  // floats summed per table entry

__global__ void fill_values(float* a, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = in[i] * 2.0f + 1.0f;
}

// out[k] = sum of table[k][0..kPerTable) + the byte b[k] (7 after the memset).
__global__ void chase_table(float* out, const float* const* table, const unsigned char* b) {
  int k = blockIdx.x;
  __shared__ float part[256];
  float s = 0;
  for (int j = threadIdx.x; j < kPerTable; j += blockDim.x) s += table[k][j];
  part[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0;
    for (int j = 0; j < blockDim.x; ++j) t += part[j];  // fixed order: deterministic
    out[k] = t + float(b[k]);
  }
}

__global__ void combine_outputs(float* c, const float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] += out[i % kTables];
}

int main() {
  float *in, *a, *c, *out;
  unsigned char* b;
  float** table;
  std::vector<float*> bufs(kTables);
  CHECK(cudaMalloc(&in, kN * sizeof(float)));
  CHECK(cudaMalloc(&a, kN * sizeof(float)));
  CHECK(cudaMalloc(&b, kN));
  CHECK(cudaMalloc(&c, kN * sizeof(float)));
  CHECK(cudaMalloc(&out, kTables * sizeof(float)));
  CHECK(cudaMalloc(&table, kTables * sizeof(float*)));
  for (float*& p : bufs) CHECK(cudaMalloc(&p, kPerTable * sizeof(float)));
  // Defined contents from the start (the capture scans memory for pointers).
  CHECK(cudaMemset(a, 0, kN * sizeof(float)));
  CHECK(cudaMemset(b, 0, kN));
  CHECK(cudaMemset(c, 0, kN * sizeof(float)));
  CHECK(cudaMemset(out, 0, kTables * sizeof(float)));
  CHECK(cudaMemcpy(table, bufs.data(), kTables * sizeof(float*), cudaMemcpyHostToDevice));
  std::vector<std::vector<float>> host_bufs(kTables, std::vector<float>(kPerTable));
  for (int k = 0; k < kTables; ++k) {
    for (int j = 0; j < kPerTable; ++j) host_bufs[k][j] = float((j % 7) + k);
    CHECK(cudaMemcpy(bufs[k], host_bufs[k].data(), kPerTable * sizeof(float),
                     cudaMemcpyHostToDevice));
  }

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  fill_values<<<kN / 256, 256, 0, s1>>>(a, in, kN);
  CHECK(cudaEventRecord(fork, s1));
  CHECK(cudaStreamWaitEvent(s2, fork, 0));
  CHECK(cudaMemsetAsync(b, 7, kN, s2));
  CHECK(cudaMemcpyAsync(c, a, kN * sizeof(float), cudaMemcpyDeviceToDevice, s1));
  chase_table<<<kTables, 256, 0, s2>>>(out, table, b);
  CHECK(cudaEventRecord(join, s2));
  CHECK(cudaStreamWaitEvent(s1, join, 0));
  combine_outputs<<<kN / 256, 256, 0, s1>>>(c, out, kN);
  CHECK(cudaStreamEndCapture(s1, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));  // as PyTorch does: only the exec remains

  std::vector<float> host_in(kN), host_c(kN), host_out(kTables);
  bool ok = true;
  for (int launch = 0; launch < 3; ++launch) {
    // New inputs, outside the graph.
    for (int i = 0; i < kN; ++i) host_in[i] = float((i + 3 * launch) % 100) * 0.25f;
    CHECK(cudaMemcpy(in, host_in.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
    for (int j = 0; j < kPerTable; ++j) host_bufs[0][j] = float(j % 5 + launch);
    CHECK(cudaMemcpy(bufs[0], host_bufs[0].data(), kPerTable * sizeof(float),
                     cudaMemcpyHostToDevice));
    CHECK(cudaGraphLaunch(exec, s1));
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaMemcpy(host_c.data(), c, kN * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(host_out.data(), out, kTables * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int k = 0; k < kTables; ++k) {
      double want = 7;
      for (int j = 0; j < kPerTable; ++j) want += host_bufs[k][j];  // small integers: exact
      if (host_out[k] != float(want)) ++bad;
    }
    for (int i = 0; i < kN; ++i)
      if (host_c[i] != host_in[i] * 2.0f + 1.0f + host_out[i % kTables]) ++bad;
    std::printf("GRAPH_REPLAY launch %d %s (out[0] = %.1f)\n", launch, bad ? "WRONG" : "OK",
                host_out[0]);
    ok &= bad == 0;
  }
  CHECK(cudaGraphExecDestroy(exec));

  // A second graph, captured on a stream created only now, whose first op is
  // a memset: the replay capture must not query that stream while it
  // captures (doing so invalidates the capture: its next call fails).
  float* d;
  CHECK(cudaMalloc(&d, kN * sizeof(float)));
  cudaStream_t s3;
  CHECK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  CHECK(cudaStreamBeginCapture(s3, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemsetAsync(d, 0, kN * sizeof(float), s3));
  fill_values<<<kN / 256, 256, 0, s3>>>(d, in, kN);
  CHECK(cudaStreamEndCapture(s3, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaGraphLaunch(exec, s3));
  CHECK(cudaStreamSynchronize(s3));
  CHECK(cudaMemcpy(host_c.data(), d, kN * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < kN; ++i) bad += host_c[i] != host_in[i] * 2.0f + 1.0f;
  std::printf("GRAPH_REPLAY second capture %s\n", bad ? "WRONG" : "OK");
  ok &= bad == 0;
  CHECK(cudaGraphExecDestroy(exec));
  std::printf("GRAPH_REPLAY %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
