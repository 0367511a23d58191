#include "tracesmith/timeline/timeline.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "lane_union_cursor.h"

namespace tracesmith::analysis {

const char* IdleCauseName(IdleCause c) {
  switch (c) {
    case IdleCause::kOtherStream:
      return "other_stream";
    case IdleCause::kSync:
      return "sync";
    case IdleCause::kHostLaunch:
      return "host_launch";
    case IdleCause::kLaunchLatency:
      return "launch_latency";
    case IdleCause::kNothingQueued:
      return "nothing_queued";
  }
  return "?";
}

const char* IdleCauseDescription(IdleCause c) {
  switch (c) {
    case IdleCause::kOtherStream:
      return "waiting on another stream";
    case IdleCause::kSync:
      return "blocked on synchronization";
    case IdleCause::kHostLaunch:
      return "waiting for host launches";
    case IdleCause::kLaunchLatency:
      return "launch latency (work queued, not started)";
    case IdleCause::kNothingQueued:
      return "nothing queued";
  }
  return "?";
}

uint64_t IdleBreakdown::total_ns() const {
  uint64_t t = 0;
  for (uint64_t v : ns) t += v;
  return t;
}

void IdleBreakdown::Add(IdleCause c, uint64_t n) {
  if (n == 0) return;
  ns[int(c)] += n;
  gaps[int(c)]++;
}

std::vector<uint8_t> NcclNameMask(const CompactTrace& trace) {
  std::vector<uint8_t> mask(trace.meta().strings.size(), 0);
  for (uint32_t id = 1; id < mask.size(); ++id) {
    std::string_view s = trace.String(id);
    for (size_t i = 0; i + 4 <= s.size() && !mask[id]; ++i)
      mask[id] = std::tolower(s[i]) == 'n' && std::tolower(s[i + 1]) == 'c' &&
                 std::tolower(s[i + 2]) == 'c' && std::tolower(s[i + 3]) == 'l';
  }
  return mask;
}

// ---- IdleClassifier ----------------------------------------------------------

IdleClassifier::IdleClassifier(const CompactTrace& trace)
    : trace_(trace), waits_by_lane_(trace.lanes().size()) {
  for (const SyncRecord& s : trace.syncs()) {  // sorted by start
    if (s.sync_type == model::kSyncStreamWaitEvent) {
      if (s.lane == kNone) continue;
      waits_by_lane_[s.lane].push_back({s.start_ns, s.end_ns});
      max_wait_ns_ = std::max(max_wait_ns_, s.end_ns - s.start_ns);
    } else {
      AppendUnion(&sync_union_by_pid_[s.pid], s.start_ns, s.end_ns);
    }
  }
}

void IdleClassifier::Classify(uint64_t g0, uint64_t g1, uint32_t next, IdleBreakdown* out) const {
  if (next == kNone) return out->Add(IdleCause::kNothingQueued, g1 - g0);
  const GpuOp op = trace_.ops()[next];
  // Stream waits on N's stream overlapping [g0, g1): the whole gap.
  const auto& waits = waits_by_lane_[op.lane()];
  auto it = std::lower_bound(waits.begin(), waits.end(), g1,
                             [](const Interval& w, uint64_t t) { return w.start < t; });
  for (auto w = it; w != waits.begin();) {
    --w;
    if (w->end > g0) return out->Add(IdleCause::kOtherStream, g1 - g0);
    if (w->start + max_wait_ns_ <= g0) break;  // it and all earlier ones end before g0
  }
  // The part of the gap the host spent inside synchronize calls.
  uint64_t sync_ns = 0;
  auto u = sync_union_by_pid_.find(trace_.PidOfLane(op.lane()));
  if (u != sync_union_by_pid_.end()) {
    const auto& v = u->second;
    auto i = std::lower_bound(v.begin(), v.end(), g1,
                              [](const Interval& x, uint64_t t) { return x.start < t; });
    while (i != v.begin()) {
      --i;
      if (i->end <= g0) break;  // disjoint and sorted: earlier ones end earlier
      sync_ns += std::min(i->end, g1) - std::max(i->start, g0);
    }
  }
  out->Add(IdleCause::kSync, sync_ns);
  const uint64_t rest = (g1 - g0) - sync_ns;
  if (trace_.CallOfOp(next) == kNone) return out->Add(IdleCause::kNothingQueued, rest);
  if (trace_.CallSpanOfOp(next).end > g0) return out->Add(IdleCause::kHostLaunch, rest);
  out->Add(IdleCause::kLaunchLatency, rest);
}

// ---- timeline ----------------------------------------------------------------

namespace {

// A union of intervals met in start order, as AppendUnion builds it, kept as its open
// (last) interval and its length so far: no list (16 bytes an interval: 170 MB for a
// device's unions at 100 M kernels).
struct RunningUnion {
  Interval open{};
  bool has = false;
  uint64_t total = 0;
  // Adds [s, e) (s at least the last start); returns whether it opened a new interval.
  bool Add(uint64_t s, uint64_t e, Interval* closed, bool* did_close) {
    *did_close = false;
    if (e <= s) return false;
    if (has && s <= open.end) {
      open.end = std::max(open.end, e);
      return false;
    }
    if (has) *closed = open, *did_close = true;
    Finish();
    open = {s, e};
    has = true;
    return true;
  }
  void Finish() {
    if (has) total += open.length();
    has = false;
  }
};

// Two running unions and the length of their intersection, counted as their intervals
// close: an interval that closes (an op starting past its end) meets, of the other union's
// intervals, only the one open then (every later one starts after it ends; an earlier one
// that met it was counted when that one closed), and meets it as far as it will ever.
struct UnionPair {
  RunningUnion a, b;
  uint64_t both = 0;
  void Add(bool to_a, uint64_t s, uint64_t e) {
    RunningUnion& u = to_a ? a : b;
    const RunningUnion& other = to_a ? b : a;
    Interval closed;
    bool did_close;
    u.Add(s, e, &closed, &did_close);
    if (did_close) Meet(closed, other);
  }
  void Finish() {
    if (a.has) Meet(a.open, b);
    a.Finish();
    b.Finish();
  }
  void Meet(const Interval& x, const RunningUnion& other) {
    if (!other.has) return;
    const uint64_t s = std::max(x.start, other.open.start), e = std::min(x.end, other.open.end);
    if (e > s) both += e - s;
  }
};

// A device's busy unions in one k-way merge over its streams: all ops (each gap before an
// interval classified by the op that opened it), kernels against copies, and NCCL against
// other kernels, summed as they grow.
struct DeviceUnions {
  uint64_t busy_ns = 0;
  UnionPair kernel_copy, nccl_compute;
};

// Without NCCL kernels (`nccl` false) the NCCL / other split is left out (compute would
// equal kernel).
template <typename IsNccl>
DeviceUnions BuildDeviceUnions(const CompactTrace& trace, std::span<const uint32_t> lanes,
                               IsNccl is_nccl, bool nccl, uint64_t w0, uint64_t w1,
                               const IdleClassifier& classifier, IdleBreakdown* idle) {
  DeviceUnions u;
  RunningUnion all;
  uint64_t t = w0;  // the end of the last busy interval
  ForEachOpByStart(
      trace, lanes, [](const GpuOp&) { return true; },
      [&](uint32_t i, uint64_t s, uint64_t e, const GpuOp& op) {
        Interval closed;
        bool did_close;
        if (all.Add(s, e, &closed, &did_close)) {
          if (did_close) t = closed.end;
          if (s > t) classifier.Classify(t, s, i, idle);
        }
        const bool kernel = op.kind() == OpKind::kKernel;
        u.kernel_copy.Add(kernel, s, e);
        if (kernel && nccl) u.nccl_compute.Add(is_nccl(op), s, e);
      });
  if (all.has) t = all.open.end;
  all.Finish();
  if (w1 > t) idle->Add(IdleCause::kNothingQueued, w1 - t);
  u.busy_ns = all.total;
  u.kernel_copy.Finish();
  u.nccl_compute.Finish();
  return u;
}

// MaxOverlap (sorter.h) of the lanes' busy unions, read through cursors.
uint32_t MaxLaneOverlap(const CompactTrace& trace, std::span<const uint32_t> lanes) {
  std::vector<LaneUnionCursor> cursors;
  for (uint32_t l : lanes) cursors.emplace_back(trace, l);
  return MaxOverlapOf(cursors);
}

}  // namespace

TimelineResult ComputeTimeline(const CompactTrace& trace, unsigned threads) {
  TimelineResult r;
  r.window_begin = trace.window_begin();
  r.window_end = trace.window_end();
  const uint64_t w0 = r.window_begin, w1 = r.window_end;
  const IdleClassifier classifier(trace);
  const std::vector<uint8_t> nccl = NcclNameMask(trace);
  auto is_nccl = [&](const GpuOp& o) {
    return o.kind() == OpKind::kKernel && o.name_id < nccl.size() && nccl[o.name_id];
  };
  bool any_nccl = false;
  for (uint8_t m : nccl) any_nccl |= m != 0;

  // Streams are independent: spread them over the cores (each worker takes
  // every n-th stream and writes only its own slots).
  const size_t n_streams = trace.gpu_lanes().size();
  r.streams.resize(n_streams);
  auto compute_stream = [&](size_t k) {
    const uint32_t lane = trace.gpu_lanes()[k];
    StreamTimeline& s = r.streams[k];
    s.lane = lane;
    LaneRange lr = trace.lane_range(lane);
    for (uint32_t i = lr.begin; i < lr.end; ++i) {
      switch (trace.ops()[i].kind()) {
        case OpKind::kKernel:
          s.kernels++;
          break;
        case OpKind::kMemcpy:
          s.memcpys++;
          break;
        case OpKind::kMemset:
          s.memsets++;
          break;
      }
    }
    // The gaps of the lane's busy union read through a cursor, not stored (20 bytes
    // per op for the list and its openers).
    uint64_t t = w0;
    for (LaneUnionCursor busy(trace, lane); !busy.done(); busy.Next()) {
      const Interval& b = busy.current();
      s.busy_ns += b.length();
      if (b.start > t) classifier.Classify(t, b.start, busy.opener(), &s.idle);
      t = b.end;
    }
    if (w1 > t) s.idle.Add(IdleCause::kNothingQueued, w1 - t);
    StreamStateMachine sm(trace, lane, /*keep_transitions=*/false);
    s.state_ns = sm.time_in_state();
  };
  // Threads only pay off for big traces (kParallelOps: ~1 ms of work).
  constexpr size_t kParallelOps = 200'000;
  if (threads == 0)
    threads = trace.ops().size() < kParallelOps ? 1 : std::thread::hardware_concurrency();
  const size_t workers = std::max<size_t>(1, std::min<size_t>(n_streams, threads));
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (size_t k = w; k < n_streams; k += workers) compute_stream(k);
    });
  for (size_t k = 0; k < n_streams; k += std::max<size_t>(workers, 1)) compute_stream(k);
  for (std::thread& t : pool) t.join();

  for (uint32_t device : trace.devices()) {
    DeviceTimeline d;
    d.device = device;
    std::vector<uint32_t> lanes = trace.DeviceLanes(device);
    d.streams = static_cast<uint32_t>(lanes.size());
    for (size_t k = 0; k < trace.gpu_lanes().size(); ++k)
      if (trace.lanes()[trace.gpu_lanes()[k]].device == device) {
        d.stream_busy_sum_ns += r.streams[k].busy_ns;
        d.ops += r.streams[k].kernels + r.streams[k].memcpys + r.streams[k].memsets;
      }
    const DeviceUnions u =
        BuildDeviceUnions(trace, lanes, is_nccl, any_nccl, w0, w1, classifier, &d.idle);
    d.busy_ns = u.busy_ns;
    d.max_concurrency = MaxLaneOverlap(trace, lanes);
    d.avg_concurrency = d.busy_ns ? double(d.stream_busy_sum_ns) / double(d.busy_ns) : 0.0;
    d.kernel_ns = u.kernel_copy.a.total;
    d.copy_ns = u.kernel_copy.b.total;
    d.kernel_copy_overlap_ns = u.kernel_copy.both;
    if (any_nccl) {
      d.nccl_ns = u.nccl_compute.a.total;
      d.compute_ns = u.nccl_compute.b.total;
      d.nccl_compute_overlap_ns = u.nccl_compute.both;
    } else {
      d.compute_ns = d.kernel_ns;
    }
    r.devices.push_back(d);
  }
  return r;
}

}  // namespace tracesmith::analysis
