// A synthetic distributed job: one trace per rank with known clocks and a
// known collective schedule, for the cross-rank analysis' tests and the
// 64-rank benchmark.
//
// Every rank runs the same loop: a "ProfilerStep#N" NVTX range holding
// compute kernels (longer on a straggler by its injected delay), then the
// step's collectives in schedule order. A collective's kernels start when
// each rank gets there (its arrival) and all end together after the last
// arrival plus a transfer time from the collective's size: what NCCL does.
// Each collective's launch is inside a PyTorch-style NVTX range
// ("nccl:all_reduce") inside a user range carrying `bytes=<N>`.
//
// Clocks: a true time T runs for the whole job. Host h reads
// CLOCK_REALTIME = T + realtime_error and CLOCK_MONOTONIC = T - boot.
// Rank r's capture clock is clock_offset + T + (T - T0) x drift_ppm / 1e6.
// Anchors at the start and the end read those clocks with noise inside
// their read window, as the capture does. TrueJobNs() gives the truth a
// test compares the recovered job clock with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::model {

struct SyntheticHost {
  std::string name;
  int64_t realtime_error_ns = 0;         // its CLOCK_REALTIME - true time
  uint64_t boot_ns = 1'000'000'000'000;  // true time - its CLOCK_MONOTONIC
};

struct SyntheticRank {
  uint32_t host = 0;
  int64_t clock_offset_ns = 0;  // capture clock - true time at T0
  double drift_ppm = 0;
  uint64_t read_window_ns = 800;
  uint64_t delay_per_step_ns = 0;  // straggler: extra compute every step
  // Straggler on the host: every step, this long on the host (a data
  // loader) before the step's first launch; its compute starts that late.
  uint64_t host_delay_per_step_ns = 0;
  // Straggler on the host at the end of its step: this long between its
  // compute and its arrival at the step's first collective (a
  // `time.sleep` before `all_reduce`).
  uint64_t host_delay_before_collectives_ns = 0;
  // Later in each of the step's other collectives by this much (between
  // DDP's gradient buckets its backward is slower): a small lateness at
  // most collectives, beside the large one of a host delay.
  uint64_t delay_between_collectives_ns = 0;
  bool anchors = true;       // false: a rank without clock anchors
  bool old_anchors = false;  // anchors without read_window_ns (older files)
};

struct SyntheticCollective {
  std::string op = "all_reduce";  // all_reduce, all_gather, reduce_scatter, broadcast
  uint64_t bytes = 1 << 20;
  uint32_t comm = 0;     // 0 or 1: which NCCL stream carries it
  bool generic = false;  // an ncclDevKernel_Generic kernel (operation from NVTX only)
  // A CPU-backend collective (gloo): no kernel, a "gloo:<op> bytes=<N>" NVTX
  // range on the host from the rank's arrival to the collective's end. With
  // sync_each_step: before the step's first collective the host waits for
  // its GPU work in a synchronizing call (gloo copies a CUDA tensor to the
  // host) that ends when its compute does, and every such collective starts
  // with a cudaEventRecord (a call that launches nothing).
  bool host_only = false;
  // With host_only: the result is copied back to the GPU when the range
  // ends (gloo on CUDA tensors): a 500 ns kernel on the compute stream,
  // launched then from "train_step (train.py:40)".
  bool launch_after = false;
};

struct SyntheticJobOptions {
  std::vector<SyntheticHost> hosts;
  std::vector<SyntheticRank> ranks;
  std::vector<SyntheticCollective> schedule;  // every step, in this order
  uint32_t steps = 20;
  uint32_t compute_kernels = 8;     // per step
  uint64_t compute_ns = 4'000'000;  // per step
  uint64_t jitter_ns = 20'000;      // random extra compute per rank and step, [0, jitter)
  uint64_t latency_ns = 15'000;     // a collective's fixed cost
  double bytes_per_ns = 40;         // its transfer rate (40 GB/s)
  uint64_t t0_ns = 1'750'000'000'000'000'000;  // true time of the start
  uint64_t seed = 7;
  // Launch calls carry Python call stacks: the step's first compute kernel
  // from "train_step (train.py:31)" (after the data loader), the others from
  // "forward (model.py:57)", collectives from "train_step (train.py:40)".
  bool stacks = false;
  // Each step ends with a cudaStreamSynchronize on the host from the last
  // collective's launch to its end (as `loss.item()` does): the host waits
  // for the slowest rank inside an API call, not between calls.
  bool sync_each_step = false;
  // NCCL's own NVTX ranges with their payloads (model::NvtxPayloadEvent), as
  // NCCL 2.19+ writes them, instead of "grad_sync bytes=<N>" ranges: each
  // NCCL collective in an "ncclAllReduce"-style range whose payload gives
  // its communicator (1000 + comm) and NCCL's message size (per rank for
  // all-gather and reduce-scatter), and at the start one ncclCommInitRank
  // payload per communicator with the ranks and the rank's place.
  bool nccl_payloads = false;
};

// `ranks` ranks, `ranks_per_host` to a host, realtime errors up to +-0.4 ms
// between hosts, capture-clock offsets and drifts that differ per rank, and
// a schedule of an all-reduce and an all-gather (communicator 0) and a
// reduce-scatter (communicator 1) per step.
SyntheticJobOptions MakeSyntheticJobOptions(uint32_t ranks, uint32_t ranks_per_host);

class SyntheticJob {
 public:
  explicit SyntheticJob(SyntheticJobOptions options);
  const SyntheticJobOptions& options() const { return options_; }
  // Rank r's trace: metadata (process with rank and host, device, thread,
  // anchors) and events in its capture clock.
  Trace RankTrace(uint32_t rank) const;
  // torchrun's agent beside the ranks: process `pid` on rank 0's host, with
  // no rank, its clock anchors and threads, and no GPU work or ranges.
  Trace LauncherTrace(uint32_t pid) const;
  // The same rows appended to `out` (its string table shared): several
  // ranks in one trace, as a merged file holds them.
  void AppendRankTrace(uint32_t rank, Trace* out) const;
  // The job time (the reference host's CLOCK_REALTIME: host of rank 0) of
  // capture time `capture_ns` of rank r: the truth for clock tests.
  uint64_t TrueJobNs(uint32_t rank, uint64_t capture_ns) const;
  uint64_t CaptureNs(uint32_t rank, uint64_t true_ns) const;
  uint32_t Pid(uint32_t rank) const { return 1000 + rank; }

 private:
  struct Part {
    uint64_t arrive = 0, end = 0;  // true time
  };
  SyntheticJobOptions options_;
  // [step][rank]: true start and end of the step; [step][collective][rank]: parts.
  std::vector<std::vector<uint64_t>> step_begin_, step_compute_end_;
  std::vector<std::vector<std::vector<Part>>> parts_;
  uint64_t end_ns_ = 0;
};

}  // namespace tracesmith::model
