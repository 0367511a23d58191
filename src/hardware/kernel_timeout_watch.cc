// KernelTimeoutWatch (kernel_timeout_watch.h).
#include "kernel_timeout_watch.h"

#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "tracesmith/base/file_util.h"
#include "tracesmith/capture/activity_converter.h"
#include "tracesmith/capture/thread_rings.h"

namespace tracesmith::hardware {
namespace {

struct LaunchNote {
  CUfunction function;
  CUcontext context;
  uint64_t time_ns;
  uint32_t correlation_id, stack_id;
};
struct LaunchRingTag {};
// 8192 launches per thread between two polls of the writer (5 ms).
using LaunchRings = capture::ThreadRings<LaunchNote, 8192, LaunchRingTag>;

CUfunction FunctionOf(CUpti_CallbackId cbid, const void* params) {
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)
    return static_cast<const cuLaunchKernelEx_params*>(params)->f;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz)
    return static_cast<const cuLaunchCooperativeKernel_params*>(params)->f;
  return static_cast<const cuLaunchKernel_params*>(params)->f;  // _ptsz: same layout
}

std::string Percent(uint64_t part, uint64_t whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole ? 100.0 * double(part) / double(whole) : 0.0);
  return buf;
}

// The message: the kernel, how long, and its hottest source lines with
// their top instruction and stall reasons.
void Print(const KernelWatchdog::Timeout& t, uint64_t timeout_ns, bool end_program,
           const KernelTimeoutWatch::LineOf& line_of, const KernelTimeoutWatch::StallOf& stall_of) {
  struct Line {
    uint64_t samples = 0;
    uint32_t top_pc = 0;
    uint64_t top_pc_samples = 0;
    std::map<std::string, uint64_t> stalls;
  };
  std::map<std::string, Line> lines;
  std::map<std::pair<std::string, uint32_t>, uint64_t> per_pc;
  // The hottest 64 (one line lookup each); the rest are said as "other".
  const size_t shown = std::min<size_t>(t.hottest.size(), 64);
  for (size_t k = 0; k < shown; ++k) {
    const KernelWatchdog::Hot& h = t.hottest[k];
    std::string where = line_of(h.cubin_crc, t.function.c_str(), h.pc_offset);
    if (where.empty()) where = "(no line info)";
    Line& l = lines[where];
    l.samples += h.samples;
    l.stalls[stall_of(h.stall)] += h.samples;
    uint64_t& pc = per_pc[{where, h.pc_offset}];
    pc += h.samples;
    if (pc > l.top_pc_samples) l.top_pc_samples = pc, l.top_pc = h.pc_offset;
  }
  std::vector<std::pair<std::string, Line>> sorted(lines.begin(), lines.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.samples > b.second.samples; });
  std::fprintf(stderr,
               "tracesmith: kernel timeout: %s has run %s (--kernel-timeout %s), launched %s "
               "ago (correlation id %u)%s\n",
               capture::Demangle(t.function.c_str()).c_str(),
               HumanDuration(t.detected_ns - t.running_since_ns).c_str(),
               HumanDuration(timeout_ns).c_str(),
               HumanDuration(t.detected_ns - t.launch_ns).c_str(), t.correlation_id,
               end_program ? "; ending the program (--on-kernel-timeout exit)" : "");
  std::fprintf(stderr, "  where its warps are (%llu samples since it started):\n",
               static_cast<unsigned long long>(t.samples));
  for (size_t i = 0; i < sorted.size() && i < 5; ++i) {
    const Line& l = sorted[i].second;
    std::vector<std::pair<uint64_t, std::string>> stalls;
    for (const auto& [name, n] : l.stalls) stalls.push_back({n, name});
    std::sort(stalls.rbegin(), stalls.rend());
    std::string why;
    for (size_t j = 0; j < stalls.size() && j < 2; ++j)
      why += (j ? ", " : "") + stalls[j].second + " " + Percent(stalls[j].first, l.samples);
    std::fprintf(stderr, "    %6s  %s  (+0x%x the hottest instruction; %s)\n",
                 Percent(l.samples, t.samples).c_str(), sorted[i].first.c_str(), l.top_pc,
                 why.c_str());
  }
  std::fprintf(stderr,
               "  the launching code: `tracesmith analyze` on the trace names it (the launch's "
               "host stack is in the trace)\n");
}

}  // namespace

void KernelTimeoutWatch::Claim(capture::CallbackClaims& claims) {
  capture::DriverClaim how;
  how.site = capture::CostSite::kLaunch;
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
    if (capture::IsKernelLaunchCallback(cbid)) claims.Driver(cbid, how);
}

void KernelTimeoutWatch::OnLaunchCall(const capture::DriverCallEvent& call) {
  if (!call.entry || !capture::IsKernelLaunchCallback(call.cbid) || !call.info->functionParams)
    return;
  LaunchNote n;
  n.function = FunctionOf(call.cbid, call.info->functionParams);
  n.context = call.info->context;
  n.time_ns = 0;
  cuptiGetTimestamp(&n.time_ns);
  n.correlation_id = call.info->correlationId;
  n.stack_id = call.stack_id;
  LaunchRings::Push(n);  // a full ring drops it: that launch is not watched
}

std::string KernelTimeoutWatch::NameOf(CUfunction f) {
  auto [it, fresh] = names_.emplace(f, std::string());
  if (fresh) {
    // The runtime launches library kernels (CUkernel, CUDA 12+) through the
    // same parameter: a handle cuFuncGetName does not take.
    const char* name = nullptr;
    if ((cuFuncGetName(&name, f) == CUDA_SUCCESS && name) ||
        (cuKernelGetName(&name, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS && name))
      it->second = name;
  }
  return it->second;
}

void KernelTimeoutWatch::Collect() {
  std::vector<LaunchNote> notes;
  LaunchRings::Drain([&](const LaunchNote& n) { notes.push_back(n); });
  if (notes.empty()) return;
  std::vector<std::pair<std::string, uint32_t>> named;  // outside the lock: driver calls
  named.reserve(notes.size());
  for (const LaunchNote& n : notes) {
    auto [dev, fresh] = devices_.emplace(n.context, 0);
    if (fresh) cuptiGetDeviceId(n.context, &dev->second);
    named.push_back({NameOf(n.function), dev->second});
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < notes.size(); ++i) {
    ++launches_;
    if (named[i].first.empty()) {
      ++unnamed_;
      continue;
    }
    watchdog_.OnLaunch(named[i].first, notes[i].correlation_id, notes[i].time_ns, notes[i].stack_id,
                       named[i].second);
  }
}

void KernelTimeoutWatch::Observe(capture::ActivityConverter& converter) {
  converter.set_kernel_observer([this](uint32_t correlation_id, uint64_t end_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    watchdog_.OnCompleted(correlation_id, end_ns);
  });
}

void KernelTimeoutWatch::OnSamples(const char* function, uint32_t device_id, uint64_t window_start,
                                   uint64_t window_end, const KernelWatchdog::Hot& hot) {
  if (!function) return;
  std::lock_guard<std::mutex> lock(mu_);
  watchdog_.OnSamples(function, device_id, window_start, window_end, hot);
}

void KernelTimeoutWatch::Check(uint64_t now_ns, const LineOf& line, const StallOf& stall) {
  std::vector<KernelWatchdog::Timeout> fired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fired = watchdog_.Check(now_ns);
    for (const auto& t : fired) fired_.push_back({t, false});
  }
  for (const auto& t : fired) Print(t, watchdog_.timeout_ns(), end_program_, line, stall);
}

void KernelTimeoutWatch::Write(format::SbtWriter& sbt) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Fired& f : fired_) {
    if (f.written) continue;
    const KernelWatchdog::Timeout& t = f.timeout;
    model::KernelTimeoutEvent e;
    e.start_ns = t.running_since_ns;
    e.end_ns = t.detected_ns;
    e.launch_ns = t.launch_ns;
    e.timeout_ns = watchdog_.timeout_ns();
    e.samples = t.samples;
    e.correlation_id = t.correlation_id;
    e.stack_id = t.stack_id;
    e.pid = pid_;
    e.device_id = t.device_id;
    e.function_id = sbt.InternString(t.function);
    e.demangled_id = sbt.InternString(capture::Demangle(t.function.c_str()));
    e.ended = end_program_ ? 1 : 0;
    sbt.Append(e);
    f.written = true;
    f.timeout.hottest = {};  // printed already; only the row stays
  }
}

void KernelTimeoutWatch::WriteStats(capture::StatSink& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  stats.Add("kernel_timeout.timeout_ms", watchdog_.timeout_ns() / 1'000'000);
  stats.Add("kernel_timeout.launches_watched", launches_ - unnamed_);
  stats.Add("kernel_timeout.launches_unnamed", unnamed_, model::kStatWarning);
  stats.Add("kernel_timeout.launch_ring_overflows", LaunchRings::dropped(), model::kStatWarning);
  stats.Add("kernel_timeout.launches_forgotten", watchdog_.launches_forgotten(),
            model::kStatWarning);
  stats.Add("kernel_timeout.timeouts", watchdog_.timeouts(), model::kStatWarning);
}

int KernelTimeoutWatch::EndProgramStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return end_program_ && !fired_.empty() ? capture::kKernelTimeoutExitStatus : 0;
}

}  // namespace tracesmith::hardware
