// KernelWatchdog: finds a kernel that has run past `profile --kernel-timeout`
// (issue #39 item 4) from what the capture already sees, without
// instrumenting anything: the launches (correlation id, function, host
// stack), the kernels' completions (CUPTI kernel records) and the GPU
// instruction samples (whose warps are on the SMs, drain window by window).
//
// A function's kernel counts as running since the later of
//  - the start of its current run of sampled windows (a window of its
//    samples at most kGapNs after the previous one continues the run), and
//  - the end of its last completed launch CUPTI delivered;
// it has run past the timeout when that is `timeout` ago, it was sampled in
// the latest window, a launch of it older than `timeout` has not completed,
// and all that has held for `confirm` (completions reach the capture once per
// flush: a kernel kept busy must not look hung for want of them). Functions
// are told apart per device. The launch named is the oldest such launch of the
// function; a reported launch stays watched until it completes.
// CUPTI delivers a buffer of kernel records only once every record in it is
// complete, so completions that share a buffer with the hung kernel's record
// arrive late: the time can then count from an earlier launch of the same
// function (docs/pc-sampling.md, "Hung kernels"). Kernels of CUDA graphs are
// not watched (their launch is the graph's).
//
// Pure bookkeeping (no CUDA): the PC sampling recorder feeds it on the
// capture's writer thread; tests feed it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace tracesmith::hardware {

class KernelWatchdog {
 public:
  // Two sampled windows further apart than this break a run (the recorder
  // drains every 20 ms).
  static constexpr uint64_t kGapNs = 200'000'000;
  // Launches not completed, kept at most (the oldest are forgotten, counted).
  static constexpr size_t kMaxOutstanding = 1u << 20;
  // Distinct (instruction, stall reason) kept per function for the report.
  static constexpr size_t kMaxHotKeys = 4096;
  static constexpr uint32_t kMaxDevices = 1024;  // device ids above are not watched

  struct Hot {  // samples of one instruction with one stall reason
    uint64_t cubin_crc = 0;
    uint32_t pc_offset = 0;
    uint32_t stall = 0;  // the caller's stall index
    uint64_t samples = 0;
  };
  struct Timeout {
    std::string function;  // as the launch callback named it (mangled)
    uint32_t correlation_id = 0;
    uint32_t stack_id = 0;
    uint32_t device_id = 0;
    uint64_t launch_ns = 0;         // the launch call (CUPTI clock)
    uint64_t running_since_ns = 0;  // see above
    uint64_t detected_ns = 0;
    uint64_t samples = 0;        // the function's samples since running_since_ns
    std::vector<Hot> hottest;    // those samples by instruction, most first
    uint64_t other_samples = 0;  // beyond kMaxHotKeys distinct keys
  };

  explicit KernelWatchdog(uint64_t timeout_ns, uint64_t confirm_ns = 0,
                          size_t max_outstanding = kMaxOutstanding)
      : timeout_ns_(timeout_ns), confirm_ns_(confirm_ns), max_outstanding_(max_outstanding) {}

  uint64_t timeout_ns() const { return timeout_ns_; }
  void OnLaunch(std::string_view function, uint32_t correlation_id, uint64_t launch_ns,
                uint32_t stack_id, uint32_t device_id);
  void OnCompleted(uint32_t correlation_id, uint64_t end_ns);
  // `samples` of `function` on `device_id` at one instruction and stall in the
  // drain window [window_start, window_end].
  void OnSamples(std::string_view function, uint32_t device_id, uint64_t window_start,
                 uint64_t window_end, const Hot& hot);
  // After a drain: the kernels past the timeout, each launch reported once.
  std::vector<Timeout> Check(uint64_t now_ns);

  uint64_t outstanding() const { return outstanding_count_; }
  uint64_t launches_forgotten() const { return forgotten_; }
  uint64_t timeouts() const { return fired_; }

 private:
  struct Pending {
    uint64_t launch_ns;
    uint32_t stack_id, device_id;
    bool reported = false;
  };
  struct Function {
    std::map<uint32_t, Pending> outstanding;  // by correlation id: launch order
    uint64_t run_start_ns = 0, last_sampled_ns = 0, last_completed_ns = 0;
    uint64_t samples = 0, other_samples = 0;
    uint64_t eligible_since_ns = 0;  // past the timeout since (0: not)
    bool reported = false;           // until one of its launches completes
    std::map<std::tuple<uint64_t, uint32_t, uint32_t>, uint64_t> hot;  // since running-since
    void ResetSamples() {
      samples = other_samples = 0;
      hot.clear();
    }
  };
  struct NameHash {  // lookups by string_view, without a string made per launch
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using FunctionMap = std::unordered_map<std::string, Function, NameHash, std::equal_to<>>;
  Function* Find(std::string_view function, uint32_t device_id);
  Function& Get(std::string_view function, uint32_t device_id);
  // Past kMaxOutstanding: the launches of functions not sampled lately (their
  // completions were lost), then, if that is not enough, all.
  void Forget();
  const uint64_t timeout_ns_, confirm_ns_;
  const size_t max_outstanding_;
  std::vector<FunctionMap> devices_;  // by device id
  std::unordered_map<uint32_t, Function*> by_correlation_;
  uint64_t outstanding_count_ = 0, forgotten_ = 0, fired_ = 0;
  uint64_t latest_window_end_ = 0;
};

}  // namespace tracesmith::hardware
