// TraceSmith's own threads beside the program (the writer, the GPU-metrics
// decoder) run under SCHED_BATCH.
//
// Under CFS a thread that wakes (the writer every poll, the decoder every
// interval) may preempt the thread running on the CPU it wakes on: that can be
// the program's launching thread, stalled mid-launch until the tick. A
// SCHED_BATCH thread never preempts on wakeup (kernel/sched/fair.c: batch and
// idle tasks wait for the tick or another CPU), and keeps its share of a busy
// CPU otherwise. Lowering one's own policy needs no privilege.
// TRACESMITH_BATCH_THREADS=0 (CaptureTuning::batch_threads) keeps the default
// policy, for comparisons.
#pragma once

#include <pthread.h>
#include <sched.h>

namespace tracesmith::capture {

// True when the calling thread now runs under SCHED_BATCH. Only from the
// default policy: a thread that inherited a real-time policy from the program
// (SCHED_FIFO, SCHED_RR) keeps it, or the program's busy real-time threads
// would starve it.
inline bool RunAsBackgroundThread(bool batch) {
  if (!batch || (sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) != SCHED_OTHER) return false;
  sched_param p{};
  p.sched_priority = 0;
  return pthread_setschedparam(pthread_self(), SCHED_BATCH, &p) == 0;
}

}  // namespace tracesmith::capture
