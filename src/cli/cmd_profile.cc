// `tracesmith profile [options] -- <command> [args...]` and its older
// spelling `tracesmith record -o FILE -- <command>`: run a program with the
// injection library (libtracesmith-inject.so) so that every process of it
// that initialises CUDA writes an SBT trace, then summarise what was written.
//
// The child inherits stdin/stdout/stderr; its exit code is returned, and a
// child killed by a signal makes tracesmith end with the same signal. The
// summary goes to stderr so the program's stdout stays clean. Signals sent to
// tracesmith are passed to the child, and the child gets SIGTERM if tracesmith
// is killed outright.
//
// Multi-process programs: the first process to initialise CUDA writes FILE;
// every other process writes <stem>.pid<PID><ext>, or <stem>.rank<RANK><ext>
// when RANK is set (torchrun). The summary lists every file of the run.
//
// Running the command (finding the injection library, its environment, signal
// forwarding, --force's old trace, finding the files written) is the capture
// library's RunUnderCapture (tracesmith/capture/run_command.h): this file
// parses, checks and prints.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "command.h"
#include "commands.h"
#include "gpu_metrics_list.h"
#include "trace_loader.h"
#include "tracesmith/analysis/capture_cost.h"
#include "tracesmith/analysis/sass_counts.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/capture/capture_options.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/model/records.h"
#include "tracesmith/session/run_command.h"
#include "tracesmith/symbolize/finish_capture.h"

namespace tracesmith::cli {
namespace {

constexpr const char* kSignalsHelp =
    "Signals: SIGTERM and SIGHUP sent to tracesmith are passed to the command, and so are "
    "SIGINT and SIGQUIT sent with kill (Ctrl-C in the terminal reaches the command directly); "
    "tracesmith then waits for the command, prints its summary and ends with the command's "
    "status. If tracesmith itself is killed (SIGKILL), the command receives SIGTERM, handled "
    "as any SIGTERM (its trace is finalised).";

struct ProfileArgs {
  std::string output;
  std::string duration, delay, capture_range, kinds;
  uint32_t buffer_mb = 256;
  uint32_t flush_ms = 500;
  bool quiet = false;
  bool force = false;
  std::string dump_raw;
  std::string stacks = "auto";
  uint32_t stack_depth = 128;
  bool no_symbolize = false;
  bool no_model_lines = false;
  bool pc_sampling = false;
  std::string pc_sampling_period;
  std::string kernel_timeout;
  std::string on_kernel_timeout = "report";
  bool sass_counts = false;
  std::string gpu_metrics;  // "" off; "default", "list" or names (--gpu-metrics[=SET])
  std::string gpu_metrics_interval;
  std::string replay_capture;
  uint32_t replay_max_mb = 4096;
  uint32_t replay_max_launches = 64;
  std::string replay_memory = "reachable";
  uint32_t replay_reach_depth = 8;
  std::string replay_ranges;
  std::vector<std::string> command;
};

std::string DefaultOutput() {
  for (int i = 1;; ++i) {
    std::string p = "trace" + std::to_string(i) + ".sbt";
    if (!PathExists(p)) return p;
  }
}

// An option error as the injection library words it (by variable) in the
// command line's terms.
std::string OptionMessage(std::string message) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {capture::kEnvBufferMb, "--buffer-mb"},
      {capture::kEnvFlushMs, "--flush-ms"},
      {capture::kEnvStackDepth, "--stack-depth"},
      {capture::kEnvReplayMaxMb, "--replay-max-mb"},
      {capture::kEnvReplayMaxLaunches, "--replay-max-launches"},
      {capture::kEnvDuration, "--duration"},
      {capture::kEnvDelay, "--delay"},
  };
  for (const auto& [env, flag] : kFlags) {
    size_t at = message.find(env);
    if (at != std::string::npos) message.replace(at, std::strlen(env), flag);
  }
  return message;
}

// Native frames named and SASS text added on the machine whose modules made
// them, by the library call an in-process capture makes at Session::Stop
// (symbolize/finish_capture.h).
void FinishOutput(const std::string& path, bool symbols, bool quiet,
                  const std::vector<symbolize::CompiledGraph>* compiled) {
  symbolize::FinishOptions options;
  options.compiled_graphs = compiled;
  options.names = symbols;
  options.time_limit_s = 0;  // the program has ended: nothing waits (SASS keeps its own budget)
  options.skip_option = "--no-symbolize";
  const symbolize::FinishReport done = symbolize::FinishCapture(path, options);
  if (quiet) return;
  for (const std::string& line : done.lines) std::fprintf(stderr, "tracesmith: %s\n", line.c_str());
}

// --gpu-metrics: what each device sampled (or why not), samples and rows.
void PrintGpuMetricsSummary(const model::Trace& t) {
  uint64_t samples = 0, rows = 0, lost = 0;
  bool asked = false;
  for (const model::Stat& s : t.Rows<model::Stat>()) {
    std::string_view name = t.strings.Get(s.name_id);
    asked = asked || name == "gpu_metrics.interval_ns";
    if (name == "gpu_metrics.samples") samples = uint64_t(s.value);
    if (name == "gpu_metrics.rows") rows = uint64_t(s.value);
    if (name == "gpu_metrics.hardware_buffer_overflows" || name == "gpu_metrics.rows_dropped" ||
        name == "gpu_metrics.sample_gaps")
      lost += uint64_t(s.value);
  }
  if (!asked) return;
  for (const model::MetadataEntry& m : t.Rows<model::MetadataEntry>()) {
    std::string_view key = t.strings.Get(m.key_id);
    if (key.starts_with("gpu_metrics.device"))
      std::fprintf(stderr, "  GPU metrics, device %s: %s\n", std::string(key.substr(18)).c_str(),
                   std::string(t.strings.Get(m.value_id)).c_str());
  }
  std::fprintf(stderr, "  GPU metrics: %llu samples, %llu rows written, %s\n",
               static_cast<unsigned long long>(samples), static_cast<unsigned long long>(rows),
               lost ? "samples lost (data loss above)" : "none dropped");
}

// Prints what one output file holds; true when it holds GPU work (kernels,
// copies or memsets).
bool PrintSummary(const std::string& path) {
  format::ReadReport report;
  auto trace = format::ReadTraceFile(path, &report);
  if (!trace.ok()) {
    std::fprintf(stderr, "tracesmith: %s: cannot read back: %s\n", path.c_str(),
                 trace.status().ToString().c_str());
    return false;
  }
  const model::Trace& t = *trace;
  std::string counts;
  model::ForEachRecordType([&]<typename T>() {
    if (!model::RecordTraits<T>::kIsEvent) return;
    size_t n = t.Rows<T>().size();
    if (n == 0) return;
    if (!counts.empty()) counts += ", ";
    counts += std::to_string(n) + " " + model::RecordTraits<T>::kLabel;
  });
  uint64_t dropped = 0;
  for (const auto& d : t.Rows<model::DropEvent>()) dropped += d.count;
  uint32_t pid = 0;
  for (const auto& p : t.Rows<model::Process>()) pid = p.pid;
  if (!pid)
    for (const auto& a : t.Rows<model::ClockAnchor>()) pid = a.pid;
  auto [lo, hi] = t.TimeRange();
  std::fprintf(stderr, "tracesmith: %s  (%s, %s%s)\n", path.c_str(),
               HumanBytes(report.file_size).c_str(),
               report.indexed ? "complete" : "unfinished: recovered up to the last chunk",
               report.clean() ? "" : ", damaged parts skipped");
  const bool gpu_work = !t.Rows<model::KernelEvent>().empty() ||
                        !t.Rows<model::MemcpyEvent>().empty() ||
                        !t.Rows<model::MemsetEvent>().empty();
  int32_t rank = -1;
  for (const auto& p : t.Rows<model::Process>()) rank = p.rank;
  std::string who = StrFormat("pid %u", pid);
  if (rank >= 0) who += StrFormat(" (rank %d)", rank);
  std::fprintf(stderr, "  %s: %s\n", who.c_str(),
               counts.empty() ? "no GPU activity recorded" : counts.c_str());
  if (!gpu_work)
    std::fprintf(stderr,
                 "  this process initialised CUDA but ran no GPU work (e.g. a launcher such as "
                 "torchrun, whose workers write their own files)\n");
  std::fprintf(stderr, "  GPU/API time span %s, dropped records: %llu%s\n",
               hi > lo ? HumanDuration(hi - lo).c_str() : "0 ns",
               static_cast<unsigned long long>(dropped),
               dropped ? " (raise --buffer-mb or lower --flush-ms)" : "");
  // Every loss the capture counted (`tracesmith info` lists them all).
  for (const auto& s : t.Rows<model::Stat>())
    if (s.severity == model::kStatDataLoss && s.value > 0)
      std::fprintf(stderr, "  data loss: %s %lld%s\n",
                   std::string(t.strings.Get(s.name_id)).c_str(), static_cast<long long>(s.value),
                   t.strings.Get(s.name_id).starts_with("pc_sampling.")
                       ? " (GPU instruction samples lost: a longer --pc-sampling-period)"
                   : t.strings.Get(s.name_id).starts_with("gpu_metrics.")
                       ? " (GPU metric samples lost: a longer --gpu-metrics-interval or fewer "
                         "metrics)"
                       : "");
  if (!t.Rows<model::SassCount>().empty()) {
    std::set<std::pair<uint32_t, uint32_t>> functions;  // (device, function)
    uint64_t executed = 0;
    for (const model::SassCount& c : t.Rows<model::SassCount>()) {
      functions.emplace(c.device_id, c.function_id);
      executed += c.executed;
    }
    std::fprintf(stderr,
                 "  instruction counts (--sass-counts): %zu functions counted, %s warp "
                 "instructions executed: `tracesmith kernel %s NAME` shows them per instruction\n",
                 functions.size(), analysis::ExactCount(executed).c_str(), path.c_str());
  }
  PrintGpuMetricsSummary(t);
  for (const auto& k : t.Rows<model::KernelTimeoutEvent>())
    std::fprintf(
        stderr,
        "  kernel timeout: %s was still running %s after it started%s: `tracesmith "
        "analyze %s` names its launching code and where its warps were\n",
        std::string(t.strings.Get(k.demangled_id ? k.demangled_id : k.function_id)).c_str(),
        HumanDuration(k.end_ns - std::min(k.start_ns, k.end_ns)).c_str(),
        k.ended ? " (the program was ended)" : "", path.c_str());
  for (const analysis::CaptureCost& c : analysis::ComputeCaptureCost(t)) {
    std::fprintf(stderr, "  %s\n", analysis::CaptureCostLine(c).c_str());
    std::vector<std::string> details = analysis::CaptureCostDetails(c);
    // The three biggest program-thread contributors and the stack phases.
    int shown = 0;
    for (const std::string& d : details) {
      bool part = d.rfind("  ", 0) == 0;
      if (d.rfind("writer.", 0) == 0 || (!part && ++shown > 3)) continue;
      std::fprintf(stderr, "    %s\n", d.c_str());
    }
  }
  return gpu_work;
}

int RunProfile(ProfileArgs& a, bool record_spelling) {
  if (a.command.empty() && a.gpu_metrics != "list") {
    std::fprintf(
        stderr,
        "tracesmith: error: no command given: tracesmith %s [options] -- <command> [args...]\n",
        record_spelling ? "record -o FILE" : "profile");
    return kExitError;
  }
  capture::CaptureOptions o;
  o.output = a.output.empty() ? DefaultOutput() : a.output;
  o.buffer_mb = a.buffer_mb;
  o.flush_ms = a.flush_ms;
  o.quiet = a.quiet;
  o.overwrite = a.force;
  if (!a.kinds.empty()) {
    auto kinds = capture::ParseKinds(a.kinds);
    if (!kinds.ok()) return ReportError(kinds.status());
    o.groups = *kinds;
  }
  if (!a.duration.empty()) {
    auto d = ParseDuration(a.duration);
    if (!d.ok()) return ReportError(d.status());
    o.duration_ns = *d;
  }
  if (!a.delay.empty()) {
    auto d = ParseDuration(a.delay);
    if (!d.ok()) return ReportError(d.status());
    o.delay_ns = *d;
  }
  if (Status st = capture::ParseCaptureRange(a.capture_range, &o); !st.ok()) return ReportError(st);
  if (o.buffer_mb < 8) return ReportError(InvalidArgument("--buffer-mb must be at least 8"));
  if (o.flush_ms < 10) return ReportError(InvalidArgument("--flush-ms must be at least 10"));
  o.dump_raw_dir = a.dump_raw;  // made absolute by RunUnderCapture
  auto stacks = capture::ParseStacksOption(a.stacks);
  if (!stacks.ok()) return ReportError(stacks.status());
  if (a.stack_depth < 1 || a.stack_depth > 256)
    return ReportError(InvalidArgument("--stack-depth must be in [1, 256]"));
  o.stacks = *stacks;
  o.stack_depth = a.stack_depth;
  auto filter = capture::ParseReplayFilter(a.replay_capture);
  if (!filter.ok()) return ReportError(filter.status());
  o.replay_capture = *filter;
  o.replay_max_mb = a.replay_max_mb;
  o.replay_max_launches = a.replay_max_launches;
  auto scope = capture::ParseMemoryScope(a.replay_memory);
  if (!scope.ok()) return ReportError(scope.status());
  if (auto r = capture::ParseDeviceRanges(a.replay_ranges); !r.ok()) return ReportError(r.status());
  o.replay_memory = *scope;
  o.replay_reach_depth = a.replay_reach_depth;
  o.replay_ranges = a.replay_ranges;
  if (a.pc_sampling || !a.pc_sampling_period.empty()) {
    auto period = capture::ParsePcSamplingPeriod(a.pc_sampling_period);
    if (!period.ok()) return ReportError(period.status());
    o.pc_sampling = *period;
  }
  if (a.on_kernel_timeout != "report" && a.on_kernel_timeout != "exit")
    return ReportError(InvalidArgument("--on-kernel-timeout: '" + a.on_kernel_timeout +
                                       "' is neither report nor exit"));
  if (!a.kernel_timeout.empty()) {
    auto t = ParseDuration(a.kernel_timeout);
    if (!t.ok()) return ReportError(InvalidArgument("--kernel-timeout: " + t.status().message()));
    if (*t == 0) return ReportError(InvalidArgument("--kernel-timeout: give a duration, e.g. 30s"));
    o.kernel_timeout_ns = *t;
    o.kernel_timeout_exit = a.on_kernel_timeout == "exit";
    if (!o.pc_sampling) o.pc_sampling = capture::kDefaultPcSamplingPeriod;
  } else if (a.on_kernel_timeout != "report") {
    return ReportError(InvalidArgument("--on-kernel-timeout needs --kernel-timeout"));
  }
  o.sass_counts = a.sass_counts;
  if (!a.gpu_metrics.empty()) {
    auto request = capture::ParseGpuMetrics(a.gpu_metrics);
    if (!request.ok()) return ReportError(request.status());
    if (request->kind == capture::GpuMetricsRequest::Kind::kList) return ListGpuMetrics();
    o.gpu_metrics = *request;
  }
  if (!a.gpu_metrics_interval.empty()) {
    if (o.gpu_metrics.kind == capture::GpuMetricsRequest::Kind::kOff)
      return ReportError(InvalidArgument("--gpu-metrics-interval needs --gpu-metrics"));
    auto interval = capture::ParseGpuMetricsInterval(a.gpu_metrics_interval);
    if (!interval.ok()) return ReportError(interval.status());
    o.gpu_metrics_interval_ns = *interval;
  }
  // The injection library parses what the child receives: anything it would
  // refuse (and then leave the program unprofiled) is refused here, up front.
  if (auto check = capture::OptionsFromEnv(capture::OptionsToEnv(o)); !check.ok())
    return ReportError(InvalidArgument(OptionMessage(check.status().message())));

  // Only a regular file is ever replaced (never a directory or a device), and
  // an existing one only with --force.
  if (Status st = CheckOutputFile(o.output, {}, a.force); !st.ok()) return ReportError(st);
  // A missing folder of the output is made now: found missing at the end, the
  // program's run would be lost.
  const std::filesystem::path out_dir = std::filesystem::path(o.output).parent_path();
  if (std::error_code ec; !out_dir.empty() && !std::filesystem::exists(out_dir, ec)) {
    const std::filesystem::path& dir = out_dir;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return ReportError(
          IoError("cannot make the output's folder " + dir.string() + ": " + ec.message()));
    if (!a.quiet) std::fprintf(stderr, "tracesmith: made the folder %s\n", dir.c_str());
  }

  session::RunOptions run;
#ifdef TS_HAVE_CUDA
  auto found = session::FindInjectLibrary();
  if (!found.ok()) return ReportError(found.status());
  run.inject_library = *found;
#else
  std::fprintf(stderr,
               "tracesmith: warning: this tracesmith was built without CUDA/CUPTI support "
               "(TS_CUDA=OFF or no CUDA toolkit): running the command unprofiled\n");
#endif
  run.command = a.command;
  run.capture = o;
  // torch.compile's model lines (symbolize/compiled_lines.h): Inductor's
  // provenance handles and torch's structured log, read when the program
  // ends; a log the user asked for (TORCH_TRACE set) is read and left.
  std::string torch_log;       // the structured log's directory
  bool own_torch_log = false;  // made for this run: removed at the end
  if (!a.no_model_lines && o.stacks != stacks::StackMode::kNone) {
    const char* user_log = getenv("TORCH_TRACE");
    own_torch_log = !user_log || !*user_log;
    torch_log = own_torch_log ? std::filesystem::absolute(o.output).string() + ".torch_trace." +
                                    std::to_string(getpid())
                              : std::string(user_log);
    run.env_defaults = {{"INDUCTOR_PROVENANCE", "1"}, {"TORCH_TRACE", torch_log}};
  }
  auto ran = session::RunUnderCapture(run);
  if (!ran.ok()) return ReportError(ran.status());
  const session::RunResult& r = *ran;
  if (!r.previous_trace.ok())
    std::fprintf(stderr, "tracesmith: warning: %s\n", r.previous_trace.message().c_str());
  const std::vector<std::string>& files = r.files;
  std::vector<symbolize::CompiledGraph> graphs;
  if (!torch_log.empty() && std::filesystem::is_directory(torch_log)) {
    if (auto g = symbolize::ReadTorchTrace(torch_log); g.ok()) graphs = std::move(*g);
  }
  for (const auto& f : files)
    FinishOutput(f, !a.no_symbolize && o.stacks != stacks::StackMode::kNone, a.quiet, &graphs);
  if (own_torch_log) {
    std::error_code ec;
    std::filesystem::remove_all(torch_log, ec);
  }

  if (!a.quiet) {
    if (r.term_signal == 0) {
      std::fprintf(stderr, "tracesmith: command exited with code %d after %.3f s\n", r.exit_code,
                   r.seconds);
    } else {
      std::fprintf(stderr, "tracesmith: command was killed by signal %d (%s) after %.3f s\n",
                   r.term_signal, strsignal(r.term_signal), r.seconds);
    }
    if (r.kept_previous)
      std::fprintf(stderr, "tracesmith: no new trace was written: the previous %s is kept\n",
                   r.output.c_str());
    if (files.empty()) {
      std::fprintf(stderr,
                   "tracesmith: no GPU activity was seen: no process of the command initialised "
                   "CUDA%s, so no trace was written\n",
                   run.inject_library.empty() ? " under a CUDA-enabled tracesmith"
                                              : " (or no GPU/driver is available)");
    } else {
      // "next:" points at a file that holds GPU work, not at a launcher's.
      std::vector<std::string> with_work;
      for (const auto& f : files)
        if (PrintSummary(f)) with_work.push_back(f);
      const std::string& f = with_work.empty() ? files.front() : with_work.front();
      std::fprintf(
          stderr,
          "tracesmith: next: tracesmith info %s | tracesmith view %s | tracesmith analyze %s\n",
          f.c_str(), f.c_str(), f.c_str());
      if (with_work.size() > 1)
        std::fprintf(stderr, "tracesmith: %zu files hold GPU work (one per process or rank)\n",
                     with_work.size());
    }
  }
  if (r.term_signal == 0) return r.exit_code;
  // Ends the same way as the command (without a core dump of tracesmith).
  const int sig = r.term_signal;
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  raise(sig);
  return 128 + sig;
}

void AddProfileOptions(Cmd* sub, ProfileArgs& a) {
  sub->add_option("--duration", a.duration, "Stop recording after this long (e.g. 10s, 500ms)");
  sub->add_option("--delay", a.delay, "Start recording this long after CUDA init");
  sub->add_option("--capture-range", a.capture_range,
                  "Record only between cudaProfilerStart/Stop (cudaProfilerApi) or inside NVTX "
                  "ranges of one name (nvtx:<name>)");
  sub->add_option("--kinds", a.kinds,
                  "Activity groups: default, all, or a list of kernel,memcpy,memset,sync,runtime,"
                  "driver,memory,nvtx,overhead,module,external; -x/+x change the default");
  sub->add_option("--buffer-mb", a.buffer_mb,
                  "Host memory cap for CUPTI buffers (records beyond it are dropped and counted)")
      ->capture_default_str();
  sub->add_option("--flush-ms", a.flush_ms, "Write period: the most a killed program loses")
      ->capture_default_str();
  sub->add_flag("-q,--quiet", a.quiet, "No messages from tracesmith (the program's output stays)");
  sub->add_flag("-f,--force", a.force, "Overwrite the output file");
  sub->add_option("--stacks", a.stacks,
                  "Host call stack at every launch, copy, memset and graph launch: none, native, "
                  "python, mixed (native frames up to the innermost Python frame, then the "
                  "Python frames), full (also the interpreter's native frames between and "
                  "above Python frames), or auto (mixed under Python, else native)")
      ->capture_default_str();
  sub->add_option("--stack-depth", a.stack_depth, "Frames kept per stack (1-256)")
      ->capture_default_str();
  sub->add_flag("--no-symbolize", a.no_symbolize,
                "Leave native frames unnamed (default: named from the modules' symbol tables "
                "when the program ends, traces up to 1 GiB; `tracesmith symbolize` adds file:line "
                "from debug info)");
  sub->add_flag("--no-model-lines", a.no_model_lines,
                "torch.compile: leave launches through Inductor's generated code named by the "
                "generated line (default: the model's line each kernel came from, from "
                "Inductor's provenance, INDUCTOR_PROVENANCE=1, and torch's structured log, "
                "TORCH_TRACE, read when the program ends)");
  sub->add_option("--replay-capture", a.replay_capture,
                  "Also record kernel launches with their module, parameters and memory before "
                  "and after, for `tracesmith replay`: all, kernel:<regex>, launch:<N> or "
                  "launch:<A>-<B> (synchronizes at each recorded launch)");
  sub->add_option("--replay-max-mb", a.replay_max_mb,
                  "Replay capture: memory images in all (later launches are skipped)")
      ->capture_default_str()
      ->check(Range(1u, 1u << 24));
  sub->add_option("--replay-memory", a.replay_memory,
                  "Replay capture: the allocations the parameters point into (params); those and "
                  "every allocation reached through pointers stored in them, transitively "
                  "(reachable: arrays of pointers, linked structures); or every live device "
                  "allocation (all: cuMemAlloc, cuMemAllocAsync/FromPool, cuMemAllocManaged, "
                  "cuMemAllocPitch, cuMemMap)")
      ->capture_default_str();
  sub->add_option("--replay-reach-depth", a.replay_reach_depth,
                  "Replay capture, --replay-memory reachable: pointer hops followed from the "
                  "parameters' allocations")
      ->capture_default_str()
      ->check(Range(1u, 64u));
  sub->add_option("--replay-ranges", a.replay_ranges,
                  "Replay capture: also these device ranges, ADDR:SIZE[,ADDR:SIZE...]");
  sub->add_option("--replay-max-launches", a.replay_max_launches,
                  "Replay capture: launches recorded at most")
      ->capture_default_str()
      ->check(Range(1u, 1u << 20));
  sub->add_flag("--pc-sampling", a.pc_sampling,
                "Also sample GPU instructions (CUPTI PC sampling, continuous: kernels stay "
                "concurrent): per instruction and stall reason, with source lines from the "
                "modules' line tables (compile with -lineinfo); `analyze` shows where inside the "
                "kernels the time went");
  sub->add_option("--pc-sampling-period", a.pc_sampling_period,
                  "GPU instruction sampling: one sample per SM every 2^N cycles, N in [5, 31] "
                  "(implies --pc-sampling; default 15: denser periods overflow CUPTI's buffer "
                  "on large GPUs)");
  sub->add_option("--kernel-timeout", a.kernel_timeout,
                  "Report a kernel still running after DURATION (e.g. 30s): which kernel, its "
                  "launch and where its warps are sampled (a spin, a barrier never reached), "
                  "printed at once and kept in the trace; turns --pc-sampling on");
  sub->add_option("--on-kernel-timeout", a.on_kernel_timeout,
                  "What follows a kernel timeout: report (the program goes on) or exit (the "
                  "trace is written and the program ended, exit status 124)")
      ->capture_default_str();
  sub->add_flag("--sass-counts", a.sass_counts,
                "Also count how many times each GPU instruction ran (CUPTI SASS metrics: exact "
                "warp and thread executions per SASS instruction, summed over each kernel's "
                "launches; CUPTI patches the kernels' code, so they run slower); `tracesmith "
                "kernel` shows the counts and an opcode histogram. Not with --pc-sampling");
  sub->add_flag("--gpu-metrics{default}", a.gpu_metrics,
                "Also sample GPU hardware metrics over time (CUPTI PM sampling, every GPU): SM "
                "active, warps resident, tensor/FP32/FP64 pipes, DRAM, L2, PCIe and NVLink "
                "throughput, as much of that set as the GPU samples in one pass; "
                "--gpu-metrics=a,b,c samples exactly those CUPTI metrics; --gpu-metrics=list "
                "prints the GPU's metrics and exits");
  sub->add_option("--gpu-metrics-interval", a.gpu_metrics_interval,
                  "GPU metrics: one sample every DURATION of GPU time, from 10us to 1s "
                  "(default 1ms, 1 kHz; 100us keeps up with one to three metrics)");
  sub->add_option("--dump-raw", a.dump_raw,
                  "Debug: also write raw CUPTI activity records to DIR (test fixtures)");
  sub->add_option("command", a.command, "The command to profile, after --")->expected(-1);
}

}  // namespace

void AddProfileCommand(Cmd& app, CommandList& commands) {
  static ProfileArgs profile_args;
  auto* profile = app.add_subcommand(
      "profile", "Run a CUDA program and record its GPU activity to an SBT trace");
  profile->add_option("-o,--output", profile_args.output,
                      "Trace file (default: trace<N>.sbt; missing folders are made); other "
                      "processes of the program write <stem>.pid<PID>.sbt");
  AddProfileOptions(profile, profile_args);
  profile->footer(kSignalsHelp);
  commands.emplace_back(profile, [] { return RunProfile(profile_args, false); });

  static ProfileArgs record_args;
  auto* record = app.add_subcommand("record", "Same as profile, with -o required");
  record->add_option("-o,--output", record_args.output, "Trace file (missing folders are made)")
      ->required();
  AddProfileOptions(record, record_args);
  record->footer(kSignalsHelp);
  commands.emplace_back(record, [] { return RunProfile(record_args, true); });
}

}  // namespace tracesmith::cli
