// KernelTimeoutWatch: `profile --kernel-timeout` inside the PC sampling
// recorder (issue #39 item 4). Launches come from the driver callbacks (one
// ring push each, no lock), completions from the kernel records, samples from
// each drain; a KernelWatchdog (kernel_watchdog.h) decides. A kernel past the
// timeout is printed at once (the kernel, how long, where its warps are
// sampled) and becomes a KernelTimeoutEvent row; with --on-kernel-timeout
// exit the recorder then asks the engine to end the program
// (Recorder::EndProgramStatus) once the row is written.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel_watchdog.h"
#include "tracesmith/capture/recorder.h"

namespace tracesmith::hardware {

class KernelTimeoutWatch {
 public:
  // `line(crc, function, pc)`: "file:line" of an instruction, "" if unknown;
  // `stall(i)`: the short name of the recorder's stall reason i.
  using LineOf = std::function<std::string(uint64_t, const char*, uint32_t)>;
  using StallOf = std::function<std::string(uint32_t)>;

  // `confirm_ns`: how long a kernel must stay past the timeout before it is
  // reported (KernelWatchdog's confirm: two of the engine's flushes).
  KernelTimeoutWatch(uint32_t pid, uint64_t timeout_ns, uint64_t confirm_ns, bool end_program)
      : pid_(pid), end_program_(end_program), watchdog_(timeout_ns, confirm_ns) {}

  // The kernel launch callbacks, timed as launches, with the host stack.
  static void Claim(capture::CallbackClaims& claims);
  // Application threads: a claimed launch's entry.
  static void OnLaunchCall(const capture::DriverCallEvent& call);
  // Writer thread: launches out of the rings; the kernel records' completions.
  void Collect();
  void Observe(capture::ActivityConverter& converter);
  // Any thread (under the recorder's lock): one drained sample row.
  void OnSamples(const char* function, uint32_t device_id, uint64_t window_start,
                 uint64_t window_end, const KernelWatchdog::Hot& hot);
  // Writer thread, after a drain: the kernels past the timeout, printed.
  void Check(uint64_t now_ns, const LineOf& line, const StallOf& stall);
  void Write(format::SbtWriter& sbt);
  void WriteStats(capture::StatSink& stats);
  int EndProgramStatus() const;

 private:
  struct Fired {
    KernelWatchdog::Timeout timeout;
    bool written = false;
  };
  std::string NameOf(CUfunction f);

  const uint32_t pid_;
  const bool end_program_;
  mutable std::mutex mu_;  // watchdog_, fired_
  KernelWatchdog watchdog_;
  std::vector<Fired> fired_;
  std::unordered_map<CUfunction, std::string> names_;  // writer thread
  std::unordered_map<CUcontext, uint32_t> devices_;    // writer thread
  uint64_t launches_ = 0, unnamed_ = 0;
};

}  // namespace tracesmith::hardware
