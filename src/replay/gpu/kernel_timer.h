// Kernel durations of replayed launches as CUPTI measures them, the same
// way `tracesmith profile` measured them inside the program (CONCURRENT_KERNEL
// activity start/end), so the two are comparable. CUDA events around one
// launch also count the event and dispatch overhead (~3 us), which dwarfs
// a 1-2 us kernel.
#pragma once

#include <cstdint>

namespace tracesmith::replay::gpu {

class KernelTimer {
 public:
  // Enables kernel activity records; false when CUPTI is unavailable (for
  // example another CUPTI client holds it): callers fall back to events.
  bool Start();
  // Flushes CUPTI and returns the duration (ns) of the last kernel that
  // completed since the previous call, or 0 when none was recorded.
  uint64_t LastKernelNs();
  bool active() const { return active_; }
  // Kernel records off while another CUPTI feature measures (the range
  // profiler of --metrics), then on again; no-ops when not active.
  void Pause();
  void Resume();

 private:
  bool active_ = false;
};

}  // namespace tracesmith::replay::gpu
