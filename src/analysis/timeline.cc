#include "tracesmith/analysis/timeline.h"

#include <algorithm>
#include <cctype>

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
      host_syncs_.push_back({s.pid, s.start_ns, s.end_ns});
      max_sync_ns_ = std::max(max_sync_ns_, s.end_ns - s.start_ns);
      AppendUnion(&host_sync_union_, s.start_ns, s.end_ns);
    }
  }
}

IdleCause IdleClassifier::Classify(uint64_t g0, uint64_t g1, uint32_t next) const {
  if (next == kNone) return IdleCause::kNothingQueued;
  const GpuOp& op = trace_.ops()[next];
  // Stream waits on N's stream overlapping [g0, g1).
  const auto& waits = waits_by_lane_[op.lane()];
  auto it = std::lower_bound(waits.begin(), waits.end(), g1,
                             [](const Interval& w, uint64_t t) { return w.start < t; });
  for (auto w = it; w != waits.begin();) {
    --w;
    if (w->end > g0) return IdleCause::kOtherStream;
    if (w->start + max_wait_ns_ <= g0) break;  // it and all earlier ones end before g0
  }
  const uint32_t call = trace_.CallOfOp(next);
  const uint32_t pid = trace_.PidOfLane(op.lane());
  const uint64_t issued = call == kNone ? UINT64_MAX : trace_.CallSpanOfOp(next).start;
  // Host syncs of the same process overlapping the gap, returned before N
  // was issued. Most gaps overlap no sync at all: check the union first.
  auto u = std::lower_bound(host_sync_union_.begin(), host_sync_union_.end(), g1,
                            [](const Interval& i, uint64_t t) { return i.start < t; });
  const bool maybe_sync = u != host_sync_union_.begin() && (u - 1)->end > g0;
  auto hs = !maybe_sync
                ? host_syncs_.begin()
                : std::lower_bound(host_syncs_.begin(), host_syncs_.end(), g1,
                                   [](const HostSync& s, uint64_t t) { return s.start < t; });
  while (hs != host_syncs_.begin()) {
    --hs;
    if (hs->start + max_sync_ns_ < g0) break;
    if (hs->pid == pid && hs->end > g0 && hs->start < g1 &&
        (issued == UINT64_MAX || hs->end <= issued))
      return IdleCause::kSync;
  }
  if (call == kNone) return IdleCause::kNothingQueued;
  if (trace_.CallSpanOfOp(next).end > g0) return IdleCause::kHostLaunch;
  return IdleCause::kLaunchLatency;
}

// ---- timeline ----------------------------------------------------------------

namespace {

// Gaps of a sorted busy list within [w0, w1), each classified by the op that
// opened the following busy interval.
void ClassifyGaps(const std::vector<Interval>& busy, const std::vector<uint32_t>& openers,
                  uint64_t w0, uint64_t w1, const IdleClassifier& classifier, IdleBreakdown* out) {
  uint64_t t = w0;
  for (size_t i = 0; i < busy.size(); ++i) {
    if (busy[i].start > t)
      out->Add(classifier.Classify(t, busy[i].start, openers[i]), busy[i].start - t);
    t = busy[i].end;
  }
  if (w1 > t) out->Add(IdleCause::kNothingQueued, w1 - t);
}

// A device's busy unions in one k-way merge over its streams: all ops (with
// the op that opened each interval), kernels, copies, and NCCL / other
// kernels.
struct DeviceUnions {
  std::vector<Interval> all, kernel, copy, nccl, compute;
  std::vector<uint32_t> openers;
};

template <typename IsNccl>
DeviceUnions BuildDeviceUnions(const CompactTrace& trace, std::span<const uint32_t> lanes,
                               IsNccl is_nccl) {
  const uint64_t w0 = trace.window_begin(), w1 = trace.window_end();
  const auto& ops = trace.ops();
  DeviceUnions u;
  std::vector<uint32_t> pos, end;
  for (uint32_t l : lanes) {
    pos.push_back(trace.lane_range(l).begin);
    end.push_back(trace.lane_range(l).end);
  }
  while (true) {
    size_t best = SIZE_MAX;
    for (size_t k = 0; k < lanes.size(); ++k)
      if (pos[k] < end[k] && (best == SIZE_MAX || ops[pos[k]].start_ns < ops[pos[best]].start_ns))
        best = k;
    if (best == SIZE_MAX) break;
    const uint32_t i = pos[best]++;
    const GpuOp& op = ops[i];
    const uint64_t s = std::clamp(op.start_ns, w0, w1), e = std::clamp(op.end_ns, w0, w1);
    if (e <= s) continue;
    const size_t before = u.all.size();
    AppendUnion(&u.all, s, e);
    if (u.all.size() != before) u.openers.push_back(i);
    if (op.kind() == OpKind::kKernel) {
      AppendUnion(&u.kernel, s, e);
      AppendUnion(is_nccl(op) ? &u.nccl : &u.compute, s, e);
    } else {
      AppendUnion(&u.copy, s, e);
    }
  }
  return u;
}

}  // namespace

TimelineResult ComputeTimeline(const CompactTrace& trace) {
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

  std::vector<std::vector<Interval>> stream_busy;
  for (uint32_t lane : trace.gpu_lanes()) {
    StreamTimeline s;
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
    std::vector<uint32_t> openers;
    const uint32_t one[] = {lane};
    std::vector<Interval> busy = OpUnion(
        trace, one, [](const GpuOp&) { return true; }, &openers);
    s.busy_ns = TotalLength(busy);
    ClassifyGaps(busy, openers, w0, w1, classifier, &s.idle);
    StreamStateMachine sm(trace, lane);
    s.state_ns = sm.time_in_state();
    stream_busy.push_back(std::move(busy));
    r.streams.push_back(s);
  }

  for (uint32_t device : trace.devices()) {
    DeviceTimeline d;
    d.device = device;
    std::vector<uint32_t> lanes = trace.DeviceLanes(device);
    d.streams = static_cast<uint32_t>(lanes.size());
    std::vector<std::span<const Interval>> per_stream;
    for (size_t k = 0; k < trace.gpu_lanes().size(); ++k)
      if (trace.lanes()[trace.gpu_lanes()[k]].device == device) {
        per_stream.push_back(stream_busy[k]);
        d.stream_busy_sum_ns += r.streams[k].busy_ns;
        d.ops += r.streams[k].kernels + r.streams[k].memcpys + r.streams[k].memsets;
      }
    DeviceUnions u = BuildDeviceUnions(trace, lanes, is_nccl);
    d.busy_ns = TotalLength(u.all);
    ClassifyGaps(u.all, u.openers, w0, w1, classifier, &d.idle);
    d.max_concurrency = MaxOverlap(per_stream);
    d.avg_concurrency = d.busy_ns ? double(d.stream_busy_sum_ns) / double(d.busy_ns) : 0.0;
    d.kernel_ns = TotalLength(u.kernel);
    d.copy_ns = TotalLength(u.copy);
    d.kernel_copy_overlap_ns = IntersectionLength(u.kernel, u.copy);
    if (any_nccl) {
      d.nccl_ns = TotalLength(u.nccl);
      d.compute_ns = TotalLength(u.compute);
      d.nccl_compute_overlap_ns = IntersectionLength(u.nccl, u.compute);
    } else {
      d.compute_ns = d.kernel_ns;
    }
    r.devices.push_back(d);
  }
  return r;
}

}  // namespace tracesmith::analysis
