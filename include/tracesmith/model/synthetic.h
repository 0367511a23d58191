// A realistic synthetic trace, for benchmarks, demos and tests that need
// volume: host threads issue cudaLaunchKernel calls whose kernels run on
// several streams and devices with per-kernel durations, launch latency,
// queueing behind earlier work, plus periodic memcpys, syncs and NVTX ranges
// (and, when asked, device allocations and frees).
// Deterministic for a given seed. Generated in batches so 10M-event traces
// stream to disk without being held in memory.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::model {

struct SyntheticOptions {
  uint64_t kernels = 1'000'000;
  uint32_t kernel_names = 50;
  uint32_t streams = 8;  // in total, spread over devices
  uint32_t devices = 2;
  uint64_t seed = 1;
  uint32_t memcpy_every = 50;  // one memcpy (with its API call) per N kernels; 0 = none
  uint32_t sync_every = 400;   // one cudaStreamSynchronize per N kernels; 0 = none
  uint32_t nvtx_every = 100;   // one NVTX range around N kernels; 0 = none
  // One device allocation per N kernels (0 = none), freed after a while: at
  // most `live_allocs` stay live, the oldest freed first (frees carry no size).
  uint32_t alloc_every = 0;
  uint32_t live_allocs = 1000;
  uint32_t pid = 4242;
};

class SyntheticTraceGenerator {
 public:
  explicit SyntheticTraceGenerator(const SyntheticOptions& options);

  // Strings used by every batch (kernel names, API names). Stable ids.
  const StringTable& strings() const { return strings_; }
  // Appends the next rows to `batch` (about `max_kernels` kernels and their
  // API calls; metadata rows in the first batch). False when nothing is left.
  bool Next(Trace* batch, uint64_t max_kernels = 65536);
  uint64_t kernels_emitted() const { return emitted_; }

 private:
  struct KernelShape {
    uint32_t name_id, demangled_id;
    uint32_t grid, block, registers, shared;
    double mean_ns;
  };
  struct StreamState {
    uint32_t device, stream;
    uint64_t busy_until = 0;
  };
  SyntheticOptions options_;
  std::mt19937_64 rng_;
  StringTable strings_;
  std::vector<KernelShape> shapes_;
  std::vector<StreamState> streams_;
  std::vector<uint32_t> sequence_;  // the "training step": a fixed order of kernel shapes
  uint32_t launch_name_, memcpy_name_, sync_name_, nvtx_name_, device_name_, process_name_;
  uint64_t host_ns_ = 1'000'000'000;
  uint64_t emitted_ = 0;
  uint32_t correlation_ = 1;
  bool first_batch_ = true;
  uint64_t nvtx_start_ = 0;
  std::vector<uint64_t> live_;  // addresses of live allocations (a ring)
  size_t live_next_ = 0;
  uint64_t next_address_ = 0x7f0000000000;
};

// The whole trace in memory (small sizes: tests, demos).
Trace MakeSyntheticTrace(const SyntheticOptions& options);

}  // namespace tracesmith::model
