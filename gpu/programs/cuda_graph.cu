// A CUDA graph of 3 kernels (stream capture in capture_steps), launched L
// times from main.
// Usage: cuda_graph [L=4]
// Expected trace: 3*L kernels "graph_step" with graph_id != 0 and 3 distinct
// graph_node_ids, L graph launches; kernels of one launch share its correlation id.
// With host stacks: 3 graph nodes made in capture_steps (GraphNode rows), so
// every kernel's call site is capture_steps, the graph launch's main.
#include "check.h"

__global__ void graph_step(float* x, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  x[i] = x[i] * a + 1.0f;
}

// Records the three launches into a graph (not inlined: the stack names it).
__attribute__((noinline)) cudaGraph_t capture_steps(cudaStream_t s, float* x) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < 3; ++k) graph_step<<<4, 256, 0, s>>>(x, 0.5f + k);
  CHECK(cudaStreamEndCapture(s, &graph));
  return graph;
}

int main(int argc, char** argv) {
  int launches = argc > 1 ? std::atoi(argv[1]) : 4;
  float* x = nullptr;
  CHECK(cudaMalloc(&x, 1024 * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph = capture_steps(s, x);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < launches; ++i) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(x));
  std::printf("cuda_graph: %d launches\n", launches);
  return 0;
}
