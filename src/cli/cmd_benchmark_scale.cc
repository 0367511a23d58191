// `tracesmith benchmark scale [--kernels N]`: peak memory and time of the
// trace-reading commands on a big synthetic trace (issue #21 item 8). The
// trace (model/synthetic.h: each kernel with its cudaLaunchKernel call, a
// memcpy every 50 kernels, a sync every 400, an NVTX range every 100) is
// written in batches to a temporary SBT file (not measured); then each
// command runs as its own child process of this binary, stdout discarded,
// and prints
//   command=<name> kernels=<n> seconds=<wall> peak_rss_mb=<ru_maxrss>
// Peak RSS is the child's own (wait4), so the commands are measured exactly
// as a user runs them, one process each.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "synthetic_file.h"

namespace tracesmith::cli {
namespace {

struct ScaleBenchOptions {
  uint64_t kernels = 10'000'000;
  uint32_t alloc_every = 0;  // allocations in the synthetic trace: one per N kernels
  std::string trace;         // an existing trace instead of the generated one
  std::string keep;          // keep the generated trace here
  std::vector<std::string> commands = {"info",    "view-stats", "timeline",
                                       "analyze", "dry-run",    "export"};
};

// The command line of a measured command, after `tracesmith`.
StatusOr<std::vector<std::string>> CommandArgs(const std::string& name, const std::string& trace,
                                               const std::string& out) {
  if (name == "info") return std::vector<std::string>{"info", trace};
  if (name == "view-stats") return std::vector<std::string>{"view", trace, "--stats"};
  if (name == "timeline") return std::vector<std::string>{"timeline", trace, "--width", "100"};
  if (name == "analyze") return std::vector<std::string>{"analyze", trace};
  if (name == "memory") return std::vector<std::string>{"memory", trace};
  if (name == "dry-run") return std::vector<std::string>{"replay", trace, "--dry-run"};
  if (name == "export")
    return std::vector<std::string>{"export", trace, "-f", "perfetto", "-o", out, "--force", "-q"};
  return InvalidArgument("--commands: unknown command '" + name +
                         "' (info, view-stats, timeline, analyze, memory, dry-run, export)");
}

struct ChildResult {
  int exit_code = 0;
  double seconds = 0;
  long peak_kib = 0;
};

// Runs this binary with `args`, stdout to /dev/null, and measures it.
StatusOr<ChildResult> RunChild(const std::vector<std::string>& args) {
  std::vector<char*> argv = {const_cast<char*>("tracesmith")};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return IoError("fork failed");
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDOUT_FILENO);
    ::execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid) return IoError("wait4 failed");
  ChildResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.peak_kib = usage.ru_maxrss;  // KiB on Linux
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

int RunScaleBenchmark(const ScaleBenchOptions& o) {
  for (const std::string& c : o.commands)
    if (auto args = CommandArgs(c, "", ""); !args.ok()) return ReportError(args.status());
  const std::string tmp = (std::filesystem::temp_directory_path() /
                           ("tracesmith_bench_scale_" + std::to_string(::getpid())))
                              .string();
  std::string path = o.trace;
  const bool generated = path.empty();
  if (generated) {
    path = o.keep.empty() ? tmp + ".sbt" : o.keep;
    std::fprintf(stderr, "writing a synthetic trace of %llu kernels to %s ...\n",
                 static_cast<unsigned long long>(o.kernels), path.c_str());
    const auto t0 = std::chrono::steady_clock::now();
    model::SyntheticOptions so;
    so.kernels = o.kernels;
    so.alloc_every = o.alloc_every;
    if (Status st = WriteSyntheticTraceFile(so, path); !st.ok()) {
      std::remove(path.c_str());
      return ReportError(st);
    }
    struct stat sb {};
    ::stat(path.c_str(), &sb);
    std::fprintf(stderr, "  %.1f s, %.1f MB (not measured)\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 double(sb.st_size) / 1e6);
  }
  const std::string out = tmp + ".out";
  int rc = kExitOk;
  for (const std::string& c : o.commands) {
    auto args = CommandArgs(c, path, out);
    std::string line = "tracesmith";
    for (const std::string& a : *args) line += " " + a;
    std::fprintf(stderr, "running %s ...\n", line.c_str());
    auto r = RunChild(*args);
    std::remove(out.c_str());
    if (!r.ok()) {
      rc = ReportError(r.status());
      break;
    }
    if (r->exit_code != 0) {
      std::fprintf(stderr, "tracesmith: error: %s exited with %d\n", line.c_str(), r->exit_code);
      rc = kExitError;
    }
    std::printf("command=%s kernels=%llu seconds=%.2f peak_rss_mb=%.0f\n", c.c_str(),
                static_cast<unsigned long long>(o.kernels), r->seconds, r->peak_kib / 1024.0);
    std::fflush(stdout);
  }
  if (generated && o.keep.empty()) std::remove(path.c_str());
  return rc;
}

}  // namespace

void AddBenchmarkScaleCommand(Cmd& bench, CommandList& commands) {
  auto* cmd = bench.add_subcommand(
      "scale",
      "Peak RSS and wall time of info, view --stats, timeline, analyze, replay --dry-run and "
      "export, each run as its own process on a generated N-kernel trace");
  auto o = std::make_shared<ScaleBenchOptions>();
  cmd->add_option("--kernels", o->kernels,
                  "Kernels in the synthetic trace (about 2.06 events each)")
      ->default_val(10'000'000);
  cmd->add_option("--alloc-every", o->alloc_every,
                  "One device allocation per N kernels in the synthetic trace, each freed later "
                  "(1: an allocation and a free per kernel; with --commands memory)")
      ->default_val(0);
  cmd->add_option("--commands", o->commands,
                  "Commands to measure: info, view-stats, timeline, analyze, dry-run, export")
      ->delimiter(',');
  cmd->add_option("--keep", o->keep, "Write the generated trace to this file and keep it");
  cmd->add_option("--trace", o->trace,
                  "Measure on this trace instead of generating one (--kernels then only labels "
                  "the output)")
      ->excludes("--keep");
  commands.emplace_back(cmd, [o] { return RunScaleBenchmark(*o); });
}

}  // namespace tracesmith::cli
