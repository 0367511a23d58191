// KernelWatchdog (kernel_watchdog.h): launches, completions and samples in,
// kernels past the timeout out.
#include "kernel_watchdog.h"

#include <algorithm>

namespace tracesmith::hardware {

KernelWatchdog::Function* KernelWatchdog::Find(std::string_view function, uint32_t device_id) {
  if (device_id >= devices_.size()) return nullptr;
  auto it = devices_[device_id].find(function);
  return it == devices_[device_id].end() ? nullptr : &it->second;
}

KernelWatchdog::Function& KernelWatchdog::Get(std::string_view function, uint32_t device_id) {
  if (device_id >= devices_.size()) devices_.resize(device_id + 1);
  FunctionMap& m = devices_[device_id];
  auto it = m.find(function);
  if (it == m.end()) it = m.emplace(std::string(function), Function{}).first;
  return it->second;
}

void KernelWatchdog::OnLaunch(std::string_view function, uint32_t correlation_id,
                              uint64_t launch_ns, uint32_t stack_id, uint32_t device_id) {
  if (device_id >= kMaxDevices) return;
  if (outstanding_count_ >= max_outstanding_) Forget();
  Function& f = Get(function, device_id);
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
  f.eligible_since_ns = 0;
  if (end_ns > f.last_completed_ns) {
    f.last_completed_ns = end_ns;
    f.ResetSamples();  // what follows is the next launch's
  }
}

void KernelWatchdog::OnSamples(std::string_view function, uint32_t device_id, uint64_t window_start,
                               uint64_t window_end, const Hot& hot) {
  latest_window_end_ = std::max(latest_window_end_, window_end);
  Function* found = Find(function, device_id);
  if (!found) return;  // never launched while watched
  Function& f = *found;
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
  for (FunctionMap& functions : devices_)
    for (auto& [name, f] : functions) {
      auto oldest = std::find_if(f.outstanding.begin(), f.outstanding.end(),
                                 [](const auto& p) { return !p.second.reported; });
      const uint64_t since = std::max(f.run_start_ns, f.last_completed_ns);
      const bool eligible = !f.reported && oldest != f.outstanding.end() &&
                            f.last_sampled_ns != 0 &&
                            // Sampled in the latest window (its warps are on the SMs now).
                            f.last_sampled_ns + kGapNs >= latest_window_end_ && now_ns >= since &&
                            now_ns - since >= timeout_ns_ && now_ns >= oldest->second.launch_ns &&
                            now_ns - oldest->second.launch_ns >= timeout_ns_;
      if (!eligible) {
        f.eligible_since_ns = 0;
        continue;
      }
      if (!f.eligible_since_ns) f.eligible_since_ns = now_ns;
      if (now_ns - f.eligible_since_ns < confirm_ns_) continue;  // a flush more to complete it
      Pending& p = oldest->second;
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
      // Reported once; the launch stays watched (its completion clears the
      // function's flag), and the function is not reported again until one
      // of its launches completes (those queued behind it).
      p.reported = true;
      f.reported = true;
      ++fired_;
    }
  return out;
}

void KernelWatchdog::Forget() {
  auto drop = [&](Function& f) {
    for (const auto& [corr, p] : f.outstanding) by_correlation_.erase(corr);
    forgotten_ += f.outstanding.size();
    outstanding_count_ -= f.outstanding.size();
    f.outstanding.clear();
  };
  for (FunctionMap& functions : devices_)
    for (auto& [name, f] : functions)
      if (f.last_sampled_ns + kGapNs < latest_window_end_ || f.last_sampled_ns == 0) drop(f);
  if (outstanding_count_ * 2 < max_outstanding_) return;
  for (FunctionMap& functions : devices_)
    for (auto& [name, f] : functions) drop(f);
}

}  // namespace tracesmith::hardware
