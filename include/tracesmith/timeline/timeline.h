// Timeline: busy and idle time per GPU stream and per device, concurrency,
// kernel/memcpy and communication/computation overlap, and why GPUs idle.
//
// Busy time is the length of the union of op intervals (clipped to the
// analysis window), so overlapping ops are never counted twice. A device is
// busy while any of its streams is. Concurrency is the number of streams
// running an op at an instant: its maximum, and its time-weighted average
// over the device's busy time (sum of stream busy time / device busy time).
//
// Every idle gap (stream-level and device-level) [g0, g1), ended by op N, is
// split between these causes:
//   other_stream   a cudaStreamWaitEvent on N's stream overlaps the gap: the
//                  stream waited for work recorded on another stream (the
//                  whole gap)
//   sync           the part of the gap during which the host was inside a
//                  synchronize call (stream, event, context) of N's process
// and the rest of the gap, by N:
//   host_launch    N's API call ended after the gap began: the GPU waited
//                  for the host to launch work
//   launch_latency N was issued before the gap began yet started later
//                  (driver/launch overhead)
//   nothing_queued no next op (after the stream's or device's last op), or
//                  N has no API record to blame
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "tracesmith/timeline/compact_trace.h"
#include "tracesmith/timeline/sorter.h"
#include "tracesmith/timeline/state_machine.h"

namespace tracesmith::analysis {

enum class IdleCause : uint8_t {
  kOtherStream,
  kSync,
  kHostLaunch,
  kLaunchLatency,
  kNothingQueued,
};
inline constexpr int kNumIdleCauses = 5;
const char* IdleCauseName(IdleCause c);         // "other_stream", ...
const char* IdleCauseDescription(IdleCause c);  // "waiting on another stream", ...

struct IdleBreakdown {
  std::array<uint64_t, kNumIdleCauses> ns{};
  std::array<uint64_t, kNumIdleCauses> gaps{};
  uint64_t total_ns() const;
  void Add(IdleCause c, uint64_t ns);
};

struct StreamTimeline {
  uint32_t lane = 0;
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  uint64_t busy_ns = 0;
  std::array<uint64_t, kNumStreamStates> state_ns{};
  IdleBreakdown idle;
};

struct DeviceTimeline {
  uint32_t device = 0;
  uint32_t streams = 0;
  uint64_t ops = 0;
  uint64_t busy_ns = 0;    // union of all ops
  uint64_t kernel_ns = 0;  // union of kernels
  uint64_t copy_ns = 0;    // union of memcpys and memsets
  uint64_t kernel_copy_overlap_ns = 0;
  uint64_t stream_busy_sum_ns = 0;  // sum of its streams' busy time
  uint32_t max_concurrency = 0;
  double avg_concurrency = 0;  // stream_busy_sum / busy (0 when never busy)
  uint64_t nccl_ns = 0;        // union of kernels whose name contains "nccl"
  uint64_t compute_ns = 0;     // union of the other kernels
  uint64_t nccl_compute_overlap_ns = 0;
  IdleBreakdown idle;
};

struct TimelineResult {
  uint64_t window_begin = 0, window_end = 0;
  std::vector<StreamTimeline> streams;  // in trace.gpu_lanes() order
  std::vector<DeviceTimeline> devices;  // in trace.devices() order
  uint64_t wall_ns() const { return window_end - window_begin; }
};

// True for kernel name ids whose name contains "nccl" (any case), indexed by
// string id.
std::vector<uint8_t> NcclNameMask(const CompactTrace& trace);

// `threads`: workers for the per-stream work; 0 = one per core for traces
// over 200k ops, else 1. The result does not depend on it.
TimelineResult ComputeTimeline(const CompactTrace& trace, unsigned threads = 0);

// Busy intervals of the given lanes' ops that satisfy `pred`, clipped to the
// window; `openers` (optional) receives the op index that began each interval.
template <typename Pred>
std::vector<Interval> OpUnion(const CompactTrace& trace, std::span<const uint32_t> lanes, Pred pred,
                              std::vector<uint32_t>* openers = nullptr);

// The ops of `lanes` for which pred(op) holds, merged across the lanes by
// less(op, op) (each lane already in that order; the earlier lane first on a
// tie): fn(op index, op). Each op is read once (a lane's next op kept beside it).
template <typename Pred, typename Less, typename Fn>
void ForEachOpMerged(const CompactTrace& trace, std::span<const uint32_t> lanes, Pred pred,
                     Less less, Fn fn);

// ForEachOpMerged by start, clipped to the window, empty ones skipped:
// fn(op index, start, end, op).
template <typename Pred, typename Fn>
void ForEachOpByStart(const CompactTrace& trace, std::span<const uint32_t> lanes, Pred pred, Fn fn);

// OpUnion's intervals handed to `fn(Interval)` one by one, in order, as they
// close: the same list, never stored (16 bytes per interval).
template <typename Pred, typename Fn>
void ForEachOpUnion(const CompactTrace& trace, std::span<const uint32_t> lanes, Pred pred, Fn fn);

// Classifies one idle gap [g0, g1) ended by op `next` (kNone: no next op).
class IdleClassifier {
 public:
  explicit IdleClassifier(const CompactTrace& trace);
  // Adds the gap [g0, g1) ended by op `next` (kNone: no next op) to `out`.
  void Classify(uint64_t g0, uint64_t g1, uint32_t next, IdleBreakdown* out) const;

 private:
  const CompactTrace& trace_;
  std::vector<std::vector<Interval>> waits_by_lane_;  // stream-wait syncs, sorted
  // Per process, the union of its host synchronize calls.
  std::unordered_map<uint32_t, std::vector<Interval>> sync_union_by_pid_;
  uint64_t max_wait_ns_ = 0;
};

// ---- template implementation ----

template <typename Pred, typename Less, typename Fn>
void ForEachOpMerged(const CompactTrace& trace, std::span<const uint32_t> lanes, Pred pred,
                     Less less, Fn fn) {
  const auto ops = trace.ops();
  // Per-lane cursors and the op each is at; the lane whose op comes first goes next (lanes
  // are few, so a linear scan beats a heap).
  std::vector<uint32_t> pos, end;
  std::vector<GpuOp> head;
  for (uint32_t l : lanes) {
    pos.push_back(trace.lane_range(l).begin);
    end.push_back(trace.lane_range(l).end);
    head.emplace_back();
  }
  auto skip = [&](size_t k) {
    for (; pos[k] < end[k]; ++pos[k])
      if (head[k] = ops[pos[k]]; pred(head[k])) return;
  };
  for (size_t k = 0; k < lanes.size(); ++k) skip(k);
  while (true) {
    size_t best = SIZE_MAX;
    for (size_t k = 0; k < lanes.size(); ++k)
      if (pos[k] < end[k] && (best == SIZE_MAX || less(head[k], head[best]))) best = k;
    if (best == SIZE_MAX) break;
    const uint32_t i = pos[best]++;
    const GpuOp op = head[best];
    skip(best);
    fn(i, op);
  }
}

template <typename Pred, typename Fn>
void ForEachOpByStart(const CompactTrace& trace, std::span<const uint32_t> lanes, Pred pred,
                      Fn fn) {
  const uint64_t w0 = trace.window_begin(), w1 = trace.window_end();
  ForEachOpMerged(
      trace, lanes, pred, [](const GpuOp& a, const GpuOp& b) { return a.start_ns < b.start_ns; },
      [&](uint32_t i, const GpuOp& op) {
        const uint64_t s = std::clamp(op.start_ns, w0, w1);
        const uint64_t e = std::clamp(op.end_ns, w0, w1);
        if (e > s) fn(i, s, e, op);
      });
}

template <typename Pred>
std::vector<Interval> OpUnion(const CompactTrace& trace, std::span<const uint32_t> lanes, Pred pred,
                              std::vector<uint32_t>* openers) {
  std::vector<Interval> out;
  ForEachOpByStart(trace, lanes, pred, [&](uint32_t i, uint64_t s, uint64_t e, const GpuOp&) {
    const size_t before = out.size();
    AppendUnion(&out, s, e);
    if (openers && out.size() != before) openers->push_back(i);
  });
  return out;
}

template <typename Pred, typename Fn>
void ForEachOpUnion(const CompactTrace& trace, std::span<const uint32_t> lanes, Pred pred, Fn fn) {
  Interval cur;
  bool open = false;  // AppendUnion on the one open interval
  ForEachOpByStart(trace, lanes, pred, [&](uint32_t, uint64_t s, uint64_t e, const GpuOp&) {
    if (open && s <= cur.end) {
      cur.end = std::max(cur.end, e);
    } else {
      if (open) fn(cur);
      cur = {s, e};
      open = true;
    }
  });
  if (open) fn(cur);
}

}  // namespace tracesmith::analysis
