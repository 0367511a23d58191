// Known synchronizations, for the sync rows the capture makes from driver
// callbacks (and the CUPTI SYNCHRONIZATION activity they replace).
// Expected: 3 stream synchronizes on stream a, 2 event synchronizes on one
// event, 4 stream-wait-events of stream b on that event, 1 device
// synchronize (context synchronize), 2 stream synchronizes of the per-thread
// default stream; every one from a cuda* runtime call (a runtime API row
// with the same correlation id), and one kernel on each of a and b first.
#include "check.h"

__global__ void bump(int* p) { atomicAdd(p, 1); }

int main() {
  int* d = nullptr;
  CHECK(cudaMalloc(&d, sizeof(int)));
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t ev;
  CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  bump<<<1, 1, 0, a>>>(d);
  bump<<<1, 1, 0, b>>>(d);
  CHECK(cudaGetLastError());
  for (int i = 0; i < 3; ++i) CHECK(cudaStreamSynchronize(a));
  CHECK(cudaEventRecord(ev, a));
  for (int i = 0; i < 2; ++i) CHECK(cudaEventSynchronize(ev));
  for (int i = 0; i < 4; ++i) CHECK(cudaStreamWaitEvent(b, ev, 0));
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < 2; ++i) CHECK(cudaStreamSynchronize(cudaStreamPerThread));
  CHECK(cudaEventDestroy(ev));
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaStreamDestroy(b));
  CHECK(cudaFree(d));
  std::printf("sync_kinds: done\n");
  return 0;
}
