// LaneUnionCursor: one GPU lane's busy union, read interval by interval
// (private to timeline/: the timeline and the per-stream state machines).
#pragma once

#include <algorithm>
#include <vector>

#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

// The busy union of one lane's ops clipped to the window, interval by
// interval: what OpUnion(trace, {lane}, all) returns, never stored (a list
// per stream would be 16 bytes per op, 160 MB at 10 M ops).
class LaneUnionCursor {
 public:
  LaneUnionCursor(const CompactTrace& t, uint32_t lane)
      : ops_(t.ops()), w0_(t.window_begin()), w1_(t.window_end()) {
    pos_ = t.lane_range(lane).begin;
    end_ = t.lane_range(lane).end;
    Next();
  }
  bool done() const { return !has_; }
  const Interval& current() const { return cur_; }
  // The op that opened current(): what OpUnion's `openers` holds for it.
  uint32_t opener() const { return opener_; }
  void Next() {
    has_ = false;
    Interval c;
    while (pos_ < end_) {  // the first non-empty op opens an interval
      c = Clip(pos_++);
      if (c.end > c.start) {
        cur_ = c;
        opener_ = pos_ - 1;
        has_ = true;
        break;
      }
    }
    while (has_ && pos_ < end_) {  // ops starting by its end extend it (AppendUnion)
      c = Clip(pos_);
      if (c.end > c.start && c.start > cur_.end) break;
      if (c.end > c.start) cur_.end = std::max(cur_.end, c.end);
      ++pos_;
    }
  }

 private:
  Interval Clip(uint32_t i) const {
    return {std::clamp(ops_[i].start_ns, w0_, w1_), std::clamp(ops_[i].end_ns, w0_, w1_)};
  }
  OpView ops_;
  uint64_t w0_, w1_;
  uint32_t pos_ = 0, end_ = 0, opener_ = kNone;
  Interval cur_;
  bool has_ = false;
};

}  // namespace tracesmith::analysis
