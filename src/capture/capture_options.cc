#include "tracesmith/capture/capture_options.h"

#include <cstdlib>
#include <string_view>
#include <vector>

#include "tracesmith/base/file_util.h"
#include "tracesmith/base/pattern.h"

extern char** environ;

namespace tracesmith::capture {
namespace {

struct GroupName {
  const char* name;
  uint32_t bit;
};
constexpr GroupName kGroupNames[] = {
    {"kernel", kGroupKernel},
    {"memcpy", kGroupMemcpy},
    {"memset", kGroupMemset},
    {"sync", kGroupSync},
    {"runtime", kGroupRuntime},
    {"driver", kGroupDriver},
    {"memory", kGroupMemory},
    {"nvtx", kGroupNvtx},
    {"overhead", kGroupOverhead},
    {"module", kGroupModule},
    {"external", kGroupExternal},
    {"driver-launch", kGroupDriverLaunch},
    {"sync-activity", kGroupSyncActivity},
};

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

StatusOr<uint32_t> GroupByName(const std::string& name) {
  if (name == "default") return kDefaultGroups;
  if (name == "all") return kAllGroups;
  if (name == "none") return 0u;
  if (name == "api") return static_cast<uint32_t>(kGroupRuntime | kGroupDriver);
  for (const auto& g : kGroupNames)
    if (name == g.name) return g.bit;
  std::string known = "default, all, none, api";
  for (const auto& g : kGroupNames) known += std::string(", ") + g.name;
  return InvalidArgument("--kinds: unknown activity group '" + name + "' (known: " + known + ")");
}

StatusOr<uint32_t> ParseUint(const std::string& name, const std::string& text, uint32_t min,
                             uint32_t max) {
  char* end = nullptr;
  unsigned long v = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min || v > max)
    return InvalidArgument(
        StrFormat("%s: '%s' is not a number in [%u, %u]", name.c_str(), text.c_str(), min, max));
  return static_cast<uint32_t>(v);
}

bool Truthy(const std::string& v) { return !v.empty() && v != "0" && v != "false"; }

}  // namespace

StatusOr<uint32_t> ParseKinds(const std::string& text) {
  std::vector<std::string> items = Split(text, ',');
  if (items.empty()) return kDefaultGroups;
  bool has_plain = false;
  for (const auto& item : items)
    if (item[0] != '+' && item[0] != '-') has_plain = true;
  uint32_t groups = has_plain ? 0 : kDefaultGroups;
  for (const auto& item : items) {
    char op = item[0];
    std::string name = (op == '+' || op == '-') ? item.substr(1) : item;
    ASSIGN_OR_RETURN(uint32_t bits, GroupByName(name));
    if (op == '-') {
      groups &= ~bits;
    } else {
      groups |= bits;
    }
  }
  return groups;
}

std::string KindsToString(uint32_t groups) {
  std::string out;
  for (const auto& g : kGroupNames) {
    if (!(groups & g.bit)) continue;
    if (!out.empty()) out += ",";
    out += g.name;
  }
  return out.empty() ? "none" : out;
}

Status ParseCaptureRange(const std::string& text, CaptureOptions* options) {
  if (text.empty() || text == "all") {
    options->range = CaptureRange::kAll;
  } else if (text == "cudaProfilerApi") {
    options->range = CaptureRange::kCudaProfilerApi;
  } else if (text.rfind("nvtx:", 0) == 0 && text.size() > 5) {
    options->range = CaptureRange::kNvtx;
    options->range_name = text.substr(5);
  } else {
    return InvalidArgument("--capture-range: '" + text +
                           "' is not one of cudaProfilerApi, nvtx:<range name>");
  }
  return OkStatus();
}

StatusOr<std::optional<stacks::StackMode>> ParseStacksOption(const std::string& text) {
  if (text == "auto") return std::optional<stacks::StackMode>();
  auto mode = stacks::ParseStackMode(text);
  if (!mode.ok())
    return InvalidArgument("--stacks: '" + text +
                           "' is not one of auto, none, native, python, mixed, full");
  return std::optional<stacks::StackMode>(*mode);
}

const char* StacksOptionText(std::optional<stacks::StackMode> stacks) {
  return stacks ? stacks::StackModeName(*stacks) : "auto";
}

std::string ReplayFilterText(const ReplayFilter& f) {
  switch (f.kind) {
    case ReplayFilter::Kind::kOff:
      return "";
    case ReplayFilter::Kind::kAll:
      return "all";
    case ReplayFilter::Kind::kKernel:
      return "kernel:" + f.regex;
    case ReplayFilter::Kind::kLaunchRange:
      return f.first == f.last ? "launch:" + std::to_string(f.first)
                               : "launch:" + std::to_string(f.first) + "-" + std::to_string(f.last);
  }
  return "";
}

StatusOr<format::MemoryScope> ParseMemoryScope(std::string_view text) {
  if (auto scope = format::MemoryScopeFromName(text)) return *scope;
  return InvalidArgument("--replay-memory: '" + std::string(text) +
                         "' is not params, reachable or all");
}

StatusOr<ReplayFilter> ParseReplayFilter(const std::string& text) {
  ReplayFilter f;
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--replay-capture: '" + text + "': " + why +
                           " (expected all, kernel:<regex>, launch:<N> or launch:<A>-<B>)");
  };
  if (text.empty()) return f;
  if (text == "all") {
    f.kind = ReplayFilter::Kind::kAll;
  } else if (text.rfind("kernel:", 0) == 0) {
    f.kind = ReplayFilter::Kind::kKernel;
    f.regex = text.substr(7);
    if (f.regex.empty()) return bad("empty regex");
    if (auto p = Pattern::Compile(f.regex, /*optimize=*/false); !p.ok())
      return bad("bad regex: " + p.status().message());
  } else if (text.rfind("launch:", 0) == 0) {
    f.kind = ReplayFilter::Kind::kLaunchRange;
    std::string range = text.substr(7);
    size_t dash = range.find('-');
    auto num = [](const std::string& s, uint64_t* v) {
      char* end = nullptr;
      *v = std::strtoull(s.c_str(), &end, 10);
      return !s.empty() && *end == '\0' && s[0] != '-';
    };
    bool ok = dash == std::string::npos
                  ? num(range, &f.first) && (f.last = f.first, true)
                  : num(range.substr(0, dash), &f.first) && num(range.substr(dash + 1), &f.last);
    if (!ok || f.last < f.first) return bad("bad launch range");
  } else {
    return bad("unknown filter");
  }
  return f;
}

StatusOr<std::vector<DeviceRange>> ParseDeviceRanges(const std::string& text) {
  std::vector<DeviceRange> out;
  for (const std::string& item : Split(text, ',')) {
    size_t colon = item.find(':');
    DeviceRange r;
    char* end = nullptr;
    bool ok = colon != std::string::npos;
    if (ok) {
      std::string a = item.substr(0, colon), s = item.substr(colon + 1);
      r.address = std::strtoull(a.c_str(), &end, 0);
      ok = !a.empty() && *end == '\0';
      r.size = std::strtoull(s.c_str(), &end, 0);
      ok = ok && !s.empty() && *end == '\0' && r.size > 0 && r.address + r.size > r.address;
    }
    if (!ok)
      return InvalidArgument("--replay-ranges: '" + item +
                             "' is not ADDR:SIZE (e.g. 0x7f0000000000:4096)");
    out.push_back(r);
  }
  return out;
}

StatusOr<CaptureOptions> OptionsFromEnv(const std::map<std::string, std::string>& env) {
  CaptureOptions o;
  auto get = [&](const char* key) -> const std::string* {
    auto it = env.find(key);
    return it == env.end() ? nullptr : &it->second;
  };
  if (auto* v = get(kEnvOutput); v && !v->empty()) o.output = *v;
  if (auto* v = get(kEnvKinds)) {
    ASSIGN_OR_RETURN(o.groups, ParseKinds(*v));
  }
  if (auto* v = get(kEnvBufferMb)) {
    // 8 MiB: at least one CUPTI buffer.
    ASSIGN_OR_RETURN(o.buffer_mb, ParseUint(kEnvBufferMb, *v, 8, 1u << 20));
  }
  if (auto* v = get(kEnvFlushMs)) {
    ASSIGN_OR_RETURN(o.flush_ms, ParseUint(kEnvFlushMs, *v, 10, 3600 * 1000));
  }
  if (auto* v = get(kEnvDuration); v && !v->empty()) {
    ASSIGN_OR_RETURN(o.duration_ns, ParseDuration(*v));
  }
  if (auto* v = get(kEnvDelay); v && !v->empty()) {
    ASSIGN_OR_RETURN(o.delay_ns, ParseDuration(*v));
  }
  if (auto* v = get(kEnvCaptureRange)) RETURN_IF_ERROR(ParseCaptureRange(*v, &o));
  if (auto* v = get(kEnvQuiet)) o.quiet = Truthy(*v);
  if (auto* v = get(kEnvForce)) o.overwrite = Truthy(*v);
  if (auto* v = get(kEnvDumpRaw)) o.dump_raw_dir = *v;
  if (auto* v = get(kEnvStacks); v && !v->empty()) {
    ASSIGN_OR_RETURN(o.stacks, ParseStacksOption(*v));
  }
  if (auto* v = get(kEnvStackDepth)) {
    ASSIGN_OR_RETURN(o.stack_depth, ParseUint(kEnvStackDepth, *v, 1, 256));
  }
  if (auto* v = get(kEnvReplayCapture)) {
    ASSIGN_OR_RETURN(o.replay_capture, ParseReplayFilter(*v));
  }
  if (auto* v = get(kEnvReplayMaxMb)) {
    ASSIGN_OR_RETURN(o.replay_max_mb, ParseUint(kEnvReplayMaxMb, *v, 1, 1u << 24));
  }
  if (auto* v = get(kEnvReplayMaxLaunches)) {
    ASSIGN_OR_RETURN(o.replay_max_launches, ParseUint(kEnvReplayMaxLaunches, *v, 1, 1u << 20));
  }
  if (auto* v = get(kEnvReplayMemory)) {
    ASSIGN_OR_RETURN(o.replay_memory, ParseMemoryScope(*v));
  }
  if (auto* v = get(kEnvReplayReachDepth)) {
    ASSIGN_OR_RETURN(o.replay_reach_depth, ParseUint(kEnvReplayReachDepth, *v, 1, 64));
  }
  if (auto* v = get(kEnvPcSampling)) {
    ASSIGN_OR_RETURN(o.pc_sampling, ParsePcSamplingPeriod(*v));
  }
  if (auto* v = get(kEnvKernelTimeout); v && !v->empty()) {
    ASSIGN_OR_RETURN(o.kernel_timeout_ns, ParseDuration(*v));
    if (o.kernel_timeout_ns < 1'000'000'000)
      return InvalidArgument("--kernel-timeout: '" + *v +
                             "' is shorter than 1s (kernel completions reach the capture once per "
                             "flush, and a busy GPU queue delays them: give e.g. 30s)");
    if (!o.pc_sampling) o.pc_sampling = kDefaultPcSamplingPeriod;  // what it watches with
    if (!(o.groups & kGroupKernel))
      return InvalidArgument(
          "--kernel-timeout needs the kernel rows (--kinds with kernel): a kernel's completion "
          "is what tells it apart from one that still runs");
    // Outside the recorded span no completion arrives while samples still do:
    // a kernel launched just before it ends would look hung.
    if (o.duration_ns || o.delay_ns || o.range != CaptureRange::kAll)
      return InvalidArgument(
          "--kernel-timeout watches the whole run: it cannot be combined with --duration, "
          "--delay or --capture-range (kernel completions stop arriving outside them)");
  }
  if (auto* v = get(kEnvOnKernelTimeout); v && !v->empty()) {
    if (*v != "report" && *v != "exit")
      return InvalidArgument("--on-kernel-timeout: '" + *v + "' is neither report nor exit");
    o.kernel_timeout_exit = *v == "exit";
  }
  if (auto* v = get(kEnvGpuMetrics); v && !v->empty()) {
    ASSIGN_OR_RETURN(o.gpu_metrics, ParseGpuMetrics(*v));
    if (o.gpu_metrics.kind == GpuMetricsRequest::Kind::kList)
      return InvalidArgument("--gpu-metrics=list lists the GPU's metrics: it is not a capture");
  }
  if (auto* v = get(kEnvGpuMetricsInterval); v && !v->empty()) {
    ASSIGN_OR_RETURN(o.gpu_metrics_interval_ns, ParseGpuMetricsInterval(*v));
  }
  if (auto* v = get(kEnvReplayRanges)) {
    RETURN_IF_ERROR(ParseDeviceRanges(*v).status());
    o.replay_ranges = *v;
  }
  if (auto* v = get(kEnvSassCounts); v && !v->empty()) {
    if (*v != "0" && *v != "1")
      return InvalidArgument(std::string(kEnvSassCounts) + ": '" + *v + "' is neither 0 nor 1");
    o.sass_counts = *v == "1";
  }
  if (auto* v = get(kEnvSymbolize); v && !v->empty()) {
    if (*v != "0" && *v != "1")
      return InvalidArgument(std::string(kEnvSymbolize) + ": '" + *v + "' is neither 0 nor 1");
    o.symbolize = *v == "1";
  }
  if (auto* v = get(kEnvSymbolizeTimeLimit); v && !v->empty()) {
    auto limit = ParseDuration(*v);
    if (!limit.ok())
      return InvalidArgument(std::string(kEnvSymbolizeTimeLimit) + ": " + limit.status().message());
    o.symbolize_time_limit_ns = *limit;
  }
  // CUPTI's SASS metrics patch every kernel's code: samples would be taken on
  // the patched code, and the pair is not known to work (docs/pc-sampling.md).
  if (o.sass_counts && o.pc_sampling)
    return InvalidArgument(
        "--sass-counts cannot be combined with --pc-sampling or --kernel-timeout (the counts "
        "patch every kernel's SASS, which the samples would then see): capture them in two runs");
  o.tuning = TuningFromEnv(env);
  return o;
}

CaptureTuning TuningFromEnv(const std::map<std::string, std::string>& env) {
  auto is = [&](const char* key, const char* value) {
    auto it = env.find(key);
    return it != env.end() && it->second == value;
  };
  // A count or size: positive, read as the engine always did ("64MB" is 64);
  // anything else leaves the default (0: the recorder's own).
  auto positive = [&](const char* key, uint32_t* field) {
    auto it = env.find(key);
    if (it == env.end()) return;
    const int n = std::atoi(it->second.c_str());
    if (n > 0) *field = uint32_t(n);
  };
  CaptureTuning t;
  t.subscribe = !is(kEnvSubscribe, "0");
  positive(kEnvDeviceBufferMb, &t.device_buffer_mb);
  t.system_thread_ids = !is(kEnvTidType, "process");
  t.meminfo_at_context = !is(kEnvMeminfoAtContext, "0");
  t.api_filter = !is(kEnvApiFilter, "0");
  t.stack_rewalk = is(kEnvStackRewalk, "1");
  t.stack_copy_probe = is(kEnvStackCopyProbe, "1");
  positive(kEnvPcSamplingHwBufferMb, &t.pc_sampling_hw_buffer_mb);
  positive(kEnvPcSamplingSleepMs, &t.pc_sampling_sleep_ms);
  positive(kEnvPcSamplingDrainMs, &t.pc_sampling_drain_ms);
  positive(kEnvPcSamplingDrainPcs, &t.pc_sampling_drain_pcs);
  positive(kEnvGpuMetricsHwBufferMb, &t.gpu_metrics_hw_buffer_mb);
  positive(kEnvGpuMetricsImageSamples, &t.gpu_metrics_image_samples);
  positive(kEnvGpuMetricsDecodeMs, &t.gpu_metrics_decode_ms);
  positive(kEnvActivityBufferKb, &t.activity_buffer_kb);
  t.buffer_prefault = !is(kEnvBufferPrefault, "0");
  t.slow_call_probe = is(kEnvSlowCallProbe, "1");
  t.batch_threads = !is(kEnvBatchThreads, "0");
  t.defer_stack_interning = !is(kEnvDeferStacks, "0");
  return t;
}

CaptureTuning TuningFromProcessEnv() {
  std::map<std::string, std::string> env;
  for (const char* key :
       {kEnvSubscribe, kEnvDeviceBufferMb, kEnvTidType, kEnvMeminfoAtContext, kEnvApiFilter,
        kEnvStackRewalk, kEnvStackCopyProbe, kEnvPcSamplingHwBufferMb, kEnvPcSamplingSleepMs,
        kEnvPcSamplingDrainMs, kEnvPcSamplingDrainPcs, kEnvGpuMetricsHwBufferMb,
        kEnvGpuMetricsImageSamples, kEnvGpuMetricsDecodeMs, kEnvActivityBufferKb,
        kEnvBufferPrefault, kEnvSlowCallProbe, kEnvBatchThreads, kEnvDeferStacks})
    if (const char* v = std::getenv(key)) env.emplace(key, v);
  return TuningFromEnv(env);
}

StatusOr<CaptureOptions> OptionsFromProcessEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind("TRACESMITH_", 0) != 0) continue;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return OptionsFromEnv(env);
}

std::map<std::string, std::string> OptionsToEnv(const CaptureOptions& o) {
  std::map<std::string, std::string> env;
  env[kEnvOutput] = o.output;
  env[kEnvKinds] = KindsToString(o.groups);
  env[kEnvBufferMb] = std::to_string(o.buffer_mb);
  env[kEnvFlushMs] = std::to_string(o.flush_ms);
  if (o.duration_ns) env[kEnvDuration] = std::to_string(o.duration_ns);
  if (o.delay_ns) env[kEnvDelay] = std::to_string(o.delay_ns);
  if (o.range == CaptureRange::kCudaProfilerApi) env[kEnvCaptureRange] = "cudaProfilerApi";
  if (o.range == CaptureRange::kNvtx) env[kEnvCaptureRange] = "nvtx:" + o.range_name;
  env[kEnvQuiet] = std::string(1, o.quiet ? '1' : '0');
  env[kEnvForce] = std::string(1, o.overwrite ? '1' : '0');
  if (!o.dump_raw_dir.empty()) env[kEnvDumpRaw] = o.dump_raw_dir;
  env[kEnvStacks] = StacksOptionText(o.stacks);
  env[kEnvStackDepth] = std::to_string(o.stack_depth);
  if (o.replay_capture.kind != ReplayFilter::Kind::kOff) {
    env[kEnvReplayCapture] = ReplayFilterText(o.replay_capture);
    env[kEnvReplayMaxMb] = std::to_string(o.replay_max_mb);
    env[kEnvReplayMaxLaunches] = std::to_string(o.replay_max_launches);
    env[kEnvReplayMemory] = format::MemoryScopeName(o.replay_memory);
    env[kEnvReplayReachDepth] = std::to_string(o.replay_reach_depth);
    if (!o.replay_ranges.empty()) env[kEnvReplayRanges] = o.replay_ranges;
  }
  if (o.pc_sampling) env[kEnvPcSampling] = std::to_string(o.pc_sampling);
  if (o.sass_counts) env[kEnvSassCounts] = "1";
  if (o.kernel_timeout_ns) {
    env[kEnvKernelTimeout] = std::to_string(o.kernel_timeout_ns);
    env[kEnvOnKernelTimeout] = o.kernel_timeout_exit ? "exit" : "report";
  }
  if (o.gpu_metrics.kind != GpuMetricsRequest::Kind::kOff) {
    env[kEnvGpuMetrics] = GpuMetricsText(o.gpu_metrics);
    env[kEnvGpuMetricsInterval] = std::to_string(o.gpu_metrics_interval_ns);
  }
  if (!o.symbolize) env[kEnvSymbolize] = "0";
  if (o.symbolize_time_limit_ns != kDefaultSymbolizeTimeLimitNs)
    env[kEnvSymbolizeTimeLimit] = std::to_string(o.symbolize_time_limit_ns);
  return env;
}

StatusOr<uint32_t> ParsePcSamplingPeriod(std::string_view text) {
  if (text.empty() || text == "auto") return kDefaultPcSamplingPeriod;
  std::string_view digits = text.starts_with("2^") ? text.substr(2) : text;
  uint32_t n = 0;
  bool ok = !digits.empty() && digits.size() <= 2;
  for (char c : digits) ok = ok && c >= '0' && c <= '9', n = n * 10 + uint32_t(c - '0');
  if (!ok || n < kMinPcSamplingPeriod || n > kMaxPcSamplingPeriod)
    return InvalidArgument(StrFormat(
        "--pc-sampling: '%.*s' is not a period: give N (a sample every 2^N cycles per SM) "
        "from %u to %u, or 'auto' (2^%u)",
        int(text.size()), text.data(), kMinPcSamplingPeriod, kMaxPcSamplingPeriod,
        kDefaultPcSamplingPeriod));
  return n;
}

const std::vector<std::string>& OptionEnvNames() {
  static const std::vector<std::string> names = {
      kEnvOutput,
      kEnvKinds,
      kEnvBufferMb,
      kEnvFlushMs,
      kEnvDuration,
      kEnvDelay,
      kEnvCaptureRange,
      kEnvQuiet,
      kEnvForce,
      kEnvDumpRaw,
      kEnvStacks,
      kEnvStackDepth,
      kEnvReplayCapture,
      kEnvReplayMaxMb,
      kEnvReplayMaxLaunches,
      kEnvReplayMemory,
      kEnvReplayRanges,
      kEnvReplayReachDepth,
      kEnvPcSampling,
      kEnvKernelTimeout,
      kEnvOnKernelTimeout,
      kEnvSassCounts,
      kEnvGpuMetrics,
      kEnvGpuMetricsInterval,
      kEnvSymbolize,
      kEnvSymbolizeTimeLimit,
  };
  return names;
}

}  // namespace tracesmith::capture
