// KernelWatchdog (kernel_watchdog.h): launches, completions and samples in,
// kernels past the timeout out.
#include "kernel_watchdog.h"

#include <algorithm>

namespace tracesmith::capture {

void KernelWatchdog::OnLaunch(std::string_view function, uint32_t correlation_id,
                              uint64_t launch_ns, uint32_t stack_id, uint32_t device_id) {
  if (outstanding_count_ >= max_outstanding_) Forget();
  auto it = functions_.find(function);
  if (it == functions_.end()) it = functions_.emplace(std::string(function), Function{}).first;
  Function& f = it->second;
  if (f.outstanding.emplace(correlation_id, Pending{launch_ns, stack_id, device_id}).second) {
    by_correlation_[correlation_id] = &f;
    ++outstanding_count_;
  }
}

void KernelWatchdog::OnCompleted(uint32_t correlation_id, uint64_t end_ns) {
  auto it = by_correlation_.find(correlation_id);
  if (it == by_correlation_.end()) return;  // a launch not watched (before the capture, a graph's)
  Function& f = *it->second;
  by_correlation_.erase(it);
  if (f.outstanding.erase(correlation_id)) --outstanding_count_;
  f.reported = false;
  if (end_ns > f.last_completed_ns) {
    f.last_completed_ns = end_ns;
    f.ResetSamples();  // what follows is the next launch's
  }
}

void KernelWatchdog::OnSamples(std::string_view function, uint64_t window_start,
                               uint64_t window_end, const Hot& hot) {
  latest_window_end_ = std::max(latest_window_end_, window_end);
  auto it = functions_.find(function);
  if (it == functions_.end()) return;  // never launched while watched
  Function& f = it->second;
  if (f.last_sampled_ns == 0 || window_start > f.last_sampled_ns + kGapNs) {
    f.run_start_ns = window_start;  // a new run of sampled windows
    f.ResetSamples();
  }
  f.last_sampled_ns = std::max(f.last_sampled_ns, window_end);
  f.samples += hot.samples;
  auto key = std::make_tuple(hot.cubin_crc, hot.pc_offset, hot.stall);
  auto h = f.hot.find(key);
  if (h != f.hot.end())
    h->second += hot.samples;
  else if (f.hot.size() < kMaxHotKeys)
    f.hot.emplace(key, hot.samples);
  else
    f.other_samples += hot.samples;
}

std::vector<KernelWatchdog::Timeout> KernelWatchdog::Check(uint64_t now_ns) {
  std::vector<Timeout> out;
  for (auto& [name, f] : functions_) {
    if (f.reported || f.outstanding.empty() || f.last_sampled_ns == 0) continue;
    // Sampled in the latest window (its warps are on the SMs now).
    if (f.last_sampled_ns + kGapNs < latest_window_end_) continue;
    const uint64_t since = std::max(f.run_start_ns, f.last_completed_ns);
    if (now_ns < since || now_ns - since < timeout_ns_) continue;
    auto oldest = f.outstanding.begin();
    const Pending& p = oldest->second;
    if (now_ns < p.launch_ns || now_ns - p.launch_ns < timeout_ns_) continue;
    Timeout t;
    t.function = name;
    t.correlation_id = oldest->first;
    t.stack_id = p.stack_id;
    t.device_id = p.device_id;
    t.launch_ns = p.launch_ns;
    t.running_since_ns = std::max(since, p.launch_ns);
    t.detected_ns = now_ns;
    t.samples = f.samples;
    t.other_samples = f.other_samples;
    for (const auto& [key, n] : f.hot)
      t.hottest.push_back(Hot{std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
    std::sort(t.hottest.begin(), t.hottest.end(),
              [](const Hot& a, const Hot& b) { return a.samples > b.samples; });
    out.push_back(std::move(t));
    // Reported once: the launch is no longer watched, and the function not
    // again until one of its launches completes (those queued behind it).
    f.reported = true;
    by_correlation_.erase(oldest->first);
    f.outstanding.erase(oldest);
    --outstanding_count_;
    ++fired_;
  }
  return out;
}

void KernelWatchdog::Forget() {
  forgotten_ += outstanding_count_;
  for (auto& [name, f] : functions_) f.outstanding.clear();
  by_correlation_.clear();
  outstanding_count_ = 0;
}

}  // namespace tracesmith::capture
