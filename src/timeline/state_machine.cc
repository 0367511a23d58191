#include "tracesmith/timeline/state_machine.h"

#include <algorithm>

#include "lane_union_cursor.h"
#include "tracesmith/timeline/sorter.h"

namespace tracesmith::analysis {

const char* StreamStateName(StreamState s) {
  switch (s) {
    case StreamState::kIdle:
      return "idle";
    case StreamState::kDispatchPending:
      return "dispatch_pending";
    case StreamState::kRunning:
      return "running";
    case StreamState::kWaiting:
      return "waiting";
    case StreamState::kFinished:
      return "finished";
  }
  return "?";
}

namespace {

// A cursor over a sorted, disjoint interval list, advanced monotonically.
struct Cursor {
  const std::vector<Interval>* list;
  size_t i = 0;
  void Advance(uint64_t t) {
    while (i < list->size() && (*list)[i].end <= t) ++i;
  }
  bool Active(uint64_t t) const { return i < list->size() && (*list)[i].start <= t; }
  uint64_t Next(uint64_t t) const {
    if (i >= list->size()) return UINT64_MAX;
    return (*list)[i].start > t ? (*list)[i].start : (*list)[i].end;
  }
};

// The union of `v` in place: sorted by start when it is not, then merged as
// AppendUnion does (no second list: 16 bytes per interval).
void UnionInPlace(std::vector<Interval>* v) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  if (!std::is_sorted(v->begin(), v->end(), by_start)) std::sort(v->begin(), v->end(), by_start);
  size_t k = 0;
  for (size_t i = 0; i < v->size(); ++i) {
    const Interval x = (*v)[i];
    if (x.end <= x.start) continue;
    if (k > 0 && x.start <= (*v)[k - 1].end)
      (*v)[k - 1].end = std::max((*v)[k - 1].end, x.end);
    else
      (*v)[k++] = x;
  }
  v->resize(k);
}

// Cursor's interface over a lane's busy union read as it goes (LaneUnionCursor):
// the running intervals, never stored.
struct UnionCursor {
  LaneUnionCursor u;
  void Advance(uint64_t t) {
    while (!u.done() && u.current().end <= t) u.Next();
  }
  bool Active(uint64_t t) const { return !u.done() && u.current().start <= t; }
  uint64_t Next(uint64_t t) const {
    if (u.done()) return UINT64_MAX;
    return u.current().start > t ? u.current().start : u.current().end;
  }
};

}  // namespace

StreamStateMachine::StreamStateMachine(const CompactTrace& trace, uint32_t lane,
                                       bool keep_transitions)
    : keep_transitions_(keep_transitions) {
  const uint64_t w0 = trace.window_begin(), w1 = trace.window_end();
  auto clip = [&](uint64_t s, uint64_t e) {
    return Interval{std::clamp(s, w0, w1), std::clamp(e, w0, w1)};
  };
  LaneRange r = trace.lane_range(lane);
  const auto ops = trace.ops();
  // Running: the lane's busy union, read as the sweep goes. Pending: the union of
  // each op's issuing call to its start. Ops come in start order and their calls
  // almost always too: the union is then built as they come, in the memory of the
  // union alone; when a call starts before the one before it, the intervals are
  // read again, kept and sorted (16 bytes per op with a call: 1 GB of a 100 M-op
  // trace's timeline on two threads).
  std::vector<Interval> pending, waiting;
  uint64_t last_end = 0, last_start = 0;
  bool calls_in_order = true;
  auto pending_of = [&](uint32_t i, const GpuOp& op) {
    return trace.CallOfOp(i) == kNone ? Interval{} : clip(trace.CallSpanOfOp(i).start, op.start_ns);
  };
  for (uint32_t i = r.begin; i < r.end; ++i) {
    const GpuOp op = ops[i];
    last_end = std::max(last_end, op.end_ns);
    if (!calls_in_order) continue;
    const Interval p = pending_of(i, op);
    if (p.end <= p.start) continue;
    calls_in_order = p.start >= last_start;
    last_start = p.start;
    AppendUnion(&pending, p.start, p.end);
  }
  if (!calls_in_order) {
    pending.clear();
    for (uint32_t i = r.begin; i < r.end; ++i) {
      const Interval p = pending_of(i, ops[i]);
      if (p.end > p.start) pending.push_back(p);
    }
    UnionInPlace(&pending);
  }
  for (const SyncRecord& s : trace.syncs())
    if (s.lane == lane && s.sync_type == model::kSyncStreamWaitEvent) {
      Interval c = clip(s.start_ns, s.end_ns);
      if (c.end > c.start) waiting.push_back(c);
    }
  UnionInPlace(&waiting);
  const uint64_t finish = r.begin == r.end ? w1 : std::clamp(last_end, w0, w1);

  UnionCursor run{LaneUnionCursor(trace, lane)};
  Cursor wait{&waiting}, pend{&pending};
  uint64_t t = w0;
  while (t < w1) {
    run.Advance(t);
    wait.Advance(t);
    pend.Advance(t);
    StreamState s;
    if (run.Active(t))
      s = StreamState::kRunning;
    else if (t >= finish)
      s = StreamState::kFinished;
    else if (wait.Active(t))
      s = StreamState::kWaiting;
    else if (pend.Active(t))
      s = StreamState::kDispatchPending;
    else
      s = StreamState::kIdle;
    uint64_t next = std::min({run.Next(t), wait.Next(t), pend.Next(t), w1});
    if (t < finish) next = std::min(next, finish);
    Emit(t, s);
    time_[int(s)] += next - t;
    t = next;
  }
}

void StreamStateMachine::Emit(uint64_t t, StreamState s) {
  if (!keep_transitions_) return;
  if (!states_.empty() && states_.back() == uint8_t(s)) return;
  times_.push_back(t);
  states_.push_back(uint8_t(s));
}

StreamState StreamStateMachine::StateAt(uint64_t t) const {
  auto it = std::upper_bound(times_.begin(), times_.end(), t);
  if (it == times_.begin()) return StreamState::kIdle;
  return StreamState(states_[it - times_.begin() - 1]);
}

}  // namespace tracesmith::analysis
