// The kernels that ran past `profile --kernel-timeout` (KernelTimeoutEvent
// rows), for `analyze`: each with its kernel's name, the launching code and
// where the function's warps were sampled (the instruction samples of
// timeline/pc_samples.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::analysis {

class CompactTrace;    // timeline/compact_trace.h
struct CallSiteRules;  // timeline/call_site.h

// A kernel that ran past `profile --kernel-timeout` (a KernelTimeoutEvent row).
struct KernelTimeoutReport {
  std::string name;  // as the kernel table names it (demangled when captured)
  uint32_t pid = 0, device_id = 0, correlation_id = 0;
  uint64_t running_ns = 0;       // from when it ran (as far as the capture could tell) to detection
  uint64_t since_launch_ns = 0;  // from its launch call to detection
  uint64_t timeout_ns = 0, samples = 0;
  uint64_t detected_ns = 0;  // on the analysis clock
  bool ended = false;        // the capture ended the program (--on-kernel-timeout exit)
  std::string site;          // the launching code (CallSiteNamer), "(no stack)" without
  // Where its warps were: the function's samples in the trace (the sampled
  // function's report: all its launches' samples, which a hang dominates).
  std::vector<LineShare> lines;
  std::vector<StallShare> stalls;
};
std::vector<KernelTimeoutReport> DescribeKernelTimeouts(const CompactTrace& trace,
                                                        const PcSampleReport& samples,
                                                        const CallSiteRules& rules);

}  // namespace tracesmith::analysis
