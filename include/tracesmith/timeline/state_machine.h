// Per-stream GPU state machine.
//
// Each GPU stream is, at every instant of the analysis window, in one state:
//   Idle            nothing issued and not finished
//   DispatchPending an op's API call has been issued (call start) but the op
//                   has not started
//   Running         an op (kernel, memcpy, memset) is executing
//   Waiting         the stream is blocked on an event (cudaStreamWaitEvent
//                   sync record on this stream) and nothing runs
//   Finished        after the stream's last op ended
// When several hold at once the first in Running > Waiting > DispatchPending
// > Idle wins. The machine is stored as its transitions (time, new state):
// 9 bytes per transition, StateAt is a binary search, O(log n).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

enum class StreamState : uint8_t { kIdle, kDispatchPending, kRunning, kWaiting, kFinished };
inline constexpr int kNumStreamStates = 5;
const char* StreamStateName(StreamState s);

class StreamStateMachine {
 public:
  // Builds the machine of GPU lane `lane` over the trace's window. Without
  // `keep_transitions` only time_in_state() is kept (StateAt and the
  // transitions are then empty): the timeline's use, storing nothing per op
  // while the lane's calls start in op order (else 16 bytes per op with a call).
  StreamStateMachine(const CompactTrace& trace, uint32_t lane, bool keep_transitions = true);

  // State at absolute time t (Idle before the window, the last state after).
  StreamState StateAt(uint64_t t) const;
  // Nanoseconds spent in each state within the window.
  const std::array<uint64_t, kNumStreamStates>& time_in_state() const { return time_; }
  size_t transitions() const { return times_.size(); }
  uint64_t transition_time(size_t i) const { return times_[i]; }
  StreamState transition_state(size_t i) const { return StreamState(states_[i]); }

 private:
  void Emit(uint64_t t, StreamState s);
  std::vector<uint64_t> times_;
  std::vector<uint8_t> states_;
  std::array<uint64_t, kNumStreamStates> time_{};
  bool keep_transitions_ = true;
};

}  // namespace tracesmith::analysis
