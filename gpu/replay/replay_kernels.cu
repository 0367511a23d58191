// Kernels for the GPU replay test (compiled to a cubin with nvcc -cubin;
// make_capture.cc loads that cubin and stores the same bytes as the module
// image of its replay capture).

// A linked list in device memory: the kernel only gets the head pointer, and
// follows `next` and `data` pointers stored inside device structs. Replay at
// other addresses would read garbage or fault; same-VA replay reproduces it.
struct Node {
  const float* data;
  const Node* next;
  int n;
  float scale;
};

extern "C" __global__ void follow_list(const Node* head, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.f;
  int hops = 0;
  for (const Node* p = head; p != nullptr; p = p->next, ++hops)
    if (i < p->n) acc += p->data[i] * p->scale;
  out[i] = acc + float(hops);
}

// Float atomics with colliding indices: the order of the additions (and so
// the rounding of the sums) depends on scheduling. Nondeterministic.
extern "C" __global__ void scatter_add(const float* src, const int* index, float* dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&dst[index[i]], src[i]);
}
