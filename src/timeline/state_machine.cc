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

// Cursor's interface over the union of a lane's pending intervals (pending_of(i) for its
// ops i in order), built as it is read, as AppendUnion would build it: right while their
// starts never go back (InOrder(), which reads what the sweep left to know).
template <typename PendingOf>
class PendingCursor {
 public:
  PendingCursor(const PendingOf& pending_of, uint32_t begin, uint32_t end)
      : pending_of_(pending_of), pos_(begin), end_(end) {
    has_next_ = Fetch(&next_);
    Load();
  }
  void Advance(uint64_t t) {
    while (has_cur_ && cur_.end <= t) Load();
  }
  bool Active(uint64_t t) const { return has_cur_ && cur_.start <= t; }
  uint64_t Next(uint64_t t) const {
    if (!has_cur_) return UINT64_MAX;
    return cur_.start > t ? cur_.start : cur_.end;
  }
  bool InOrder() {
    Interval p;
    while (in_order_ && Fetch(&p)) {
    }
    return in_order_;
  }

 private:
  // The next non-empty interval, its start checked against the one before.
  bool Fetch(Interval* p) {
    while (pos_ < end_) {
      *p = pending_of_(pos_++);
      if (p->end <= p->start) continue;
      in_order_ = in_order_ && p->start >= last_start_;
      last_start_ = p->start;
      return true;
    }
    return false;
  }
  void Load() {
    has_cur_ = has_next_;
    if (!has_cur_) return;
    cur_ = next_;
    while ((has_next_ = Fetch(&next_)) && next_.start <= cur_.end)
      cur_.end = std::max(cur_.end, next_.end);
  }

  const PendingOf& pending_of_;
  uint32_t pos_, end_;
  uint64_t last_start_ = 0;
  bool in_order_ = true, has_cur_ = false, has_next_ = false;
  Interval cur_, next_;
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
  uint64_t last_end = 0;
  for (uint32_t i = r.begin; i < r.end; ++i) last_end = std::max(last_end, ops[i].end_ns);
  std::vector<Interval> waiting;
  for (const SyncRecord& s : trace.syncs())
    if (s.lane == lane && s.sync_type == model::kSyncStreamWaitEvent) {
      Interval c = clip(s.start_ns, s.end_ns);
      if (c.end > c.start) waiting.push_back(c);
    }
  UnionInPlace(&waiting);
  const uint64_t finish = r.begin == r.end ? w1 : std::clamp(last_end, w0, w1);

  // Running: the lane's busy union, read as the sweep goes. Pending: the union of each
  // op's issuing call to its start, read as the sweep goes too when the calls start in
  // op order (almost always: nothing stored); when one starts before the one before it,
  // the sweep is run again over the intervals kept and sorted (16 bytes per op with a
  // call).
  auto sweep = [&](auto& pend) {
    UnionCursor run{LaneUnionCursor(trace, lane)};
    Cursor wait{&waiting};
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
  };
  auto pending_of = [&](uint32_t i) {
    if (trace.CallOfOp(i) == kNone) return Interval{};
    return clip(trace.CallSpanOfOp(i).start, ops[i].start_ns);
  };
  PendingCursor streamed{pending_of, r.begin, r.end};
  sweep(streamed);
  if (streamed.InOrder()) return;
  times_.clear();
  states_.clear();
  time_ = {};
  std::vector<Interval> pending;
  for (uint32_t i = r.begin; i < r.end; ++i) {
    const Interval p = pending_of(i);
    if (p.end > p.start) pending.push_back(p);
  }
  UnionInPlace(&pending);
  Cursor pend{&pending};
  sweep(pend);
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
