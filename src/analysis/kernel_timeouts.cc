// The kernels that ran past `profile --kernel-timeout` (kernel_timeouts.h:
// DescribeKernelTimeouts): each KernelTimeoutEvent row with its kernel's
// name, the launching code (the launch's host stack) and where the
// function's warps were sampled.
#include "tracesmith/analysis/kernel_timeouts.h"

#include "tracesmith/analysis/report.h"
#include "tracesmith/timeline/call_site.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

std::vector<KernelTimeoutReport> DescribeKernelTimeouts(const CompactTrace& t,
                                                        const PcSampleReport& samples,
                                                        const CallSiteRules& rules) {
  std::vector<KernelTimeoutReport> out;
  if (t.kernel_timeouts().empty()) return out;
  CallSiteNamer namer(t.meta(), rules);
  for (const model::KernelTimeoutEvent& e : t.kernel_timeouts()) {
    KernelTimeoutReport k;
    const std::string_view mangled = t.meta().strings.Get(e.function_id);
    k.name = std::string(t.meta().strings.Get(e.demangled_id ? e.demangled_id : e.function_id));
    k.pid = e.pid;
    k.device_id = e.device_id;
    k.correlation_id = e.correlation_id;
    k.running_ns = e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0;
    k.since_launch_ns = e.end_ns > e.launch_ns ? e.end_ns - e.launch_ns : 0;
    k.timeout_ns = e.timeout_ns;
    k.samples = e.samples;
    k.detected_ns = e.end_ns;
    k.ended = e.ended != 0;
    k.site = namer.Name(e.stack_id);
    for (const FunctionSamples& f : samples.functions)
      if (f.pid == e.pid && f.function == mangled) {
        k.lines = f.lines;
        k.stalls = f.stalls;
      }
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace tracesmith::analysis
