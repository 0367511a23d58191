// `tracesmith profile [options] -- <command> [args...]` and its older
// spelling `tracesmith record -o FILE -- <command>`: run a program with the
// injection library (libtracesmith-inject.so) so that every process of it
// that initialises CUDA writes an SBT trace, then summarise what was written.
//
// The child inherits stdin/stdout/stderr; its exit code is returned, and a
// child killed by a signal makes tracesmith end with the same signal. The
// summary goes to stderr so the program's stdout stays clean. Signals sent to
// tracesmith are passed to the child (signal_forwarder.h), and the child gets
// SIGTERM if tracesmith is killed outright.
//
// Multi-process programs: the first process to initialise CUDA writes FILE;
// every other process writes <stem>.pid<PID><ext>, or <stem>.rank<RANK><ext>
// when RANK is set (torchrun). The summary lists every file of the run.
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "command.h"
#include "commands.h"
#include "signal_forwarder.h"
#include "trace_loader.h"
#include "tracesmith/analysis/capture_cost.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/capture/capture_options.h"
#include "tracesmith/capture/stacks/symbolizer.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/records.h"

namespace tracesmith::cli {
namespace {

constexpr const char* kInjectLibName = "libtracesmith-inject.so";

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
  std::string replay_capture;
  uint32_t replay_max_mb = 4096;
  uint32_t replay_max_launches = 64;
  std::string replay_memory = "params";
  std::string replay_ranges;
  std::vector<std::string> command;
};

#ifdef TS_HAVE_CUDA  // used only to find the injection library
std::string ExeDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}
#endif  // TS_HAVE_CUDA

bool Exists(const std::string& path) {
  struct stat sb;
  return ::stat(path.c_str(), &sb) == 0;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (!getcwd(cwd, sizeof(cwd))) return path;
  return std::string(cwd) + "/" + path;
}

#ifdef TS_HAVE_CUDA
// The injection library: $TRACESMITH_INJECT_LIB, else beside the binary
// (<prefix>/bin/tracesmith -> <prefix>/lib/libtracesmith-inject.so).
StatusOr<std::string> FindInjectLibrary() {
  if (const char* env = getenv("TRACESMITH_INJECT_LIB"); env && *env) {
    if (!Exists(env))
      return NotFound(std::string("TRACESMITH_INJECT_LIB=") + env + ": no such file");
    return Absolute(env);
  }
  std::string dir = ExeDir();
  for (const std::string& c : {dir + "/../lib/" + kInjectLibName, dir + "/" + kInjectLibName,
                               dir + "/../lib64/" + kInjectLibName}) {
    if (Exists(c)) {
      char real[4096];
      return std::string(realpath(c.c_str(), real) ? real : c.c_str());
    }
  }
  return NotFound(std::string("cannot find ") + kInjectLibName + " next to " + dir +
                  "/tracesmith (looked in ../lib and the same folder); set TRACESMITH_INJECT_LIB");
}
#endif  // TS_HAVE_CUDA

std::string DefaultOutput() {
  for (int i = 1;; ++i) {
    std::string p = "trace" + std::to_string(i) + ".sbt";
    if (!Exists(p)) return p;
  }
}

// `profile --force` over an existing trace: the old file is renamed to a
// hidden name beside it (".<name>.old-<pid>-XXXXXX") before the command
// starts, so the injection library creates FILE afresh, exactly as when FILE
// did not exist. After the command, Settle() deletes the old file when the
// run wrote a new FILE, and otherwise renames it back: a run that records
// nothing (no process initialised CUDA) no longer destroys the last trace.
// Renames within one directory are atomic; if tracesmith itself is killed
// meanwhile, the old trace survives under the hidden name.
class PreviousTrace {
 public:
  static StatusOr<PreviousTrace> SetAside(const std::string& path) {
    PreviousTrace p;
    if (!Exists(path)) return p;
    // A fresh unique name beside `path`; rename() replaces that empty file.
    ASSIGN_OR_RETURN(std::string aside, CreateFileBeside(path, "old"));
    if (::rename(path.c_str(), aside.c_str()) != 0) {
      Status st = IoError(StrFormat("cannot set the previous %s aside as %s: %s", path.c_str(),
                                    aside.c_str(), std::strerror(errno)));
      ::unlink(aside.c_str());
      return st;
    }
    p.path_ = path;
    p.aside_ = aside;
    return p;
  }

  // Returns true when the old trace was put back (no new one was written).
  bool Settle() {
    if (aside_.empty()) return false;
    const std::string aside = std::move(aside_);
    aside_.clear();
    // link() never replaces: a FILE written by the run wins.
    if (::link(aside.c_str(), path_.c_str()) == 0) {
      ::unlink(aside.c_str());
      return true;
    }
    if (errno == EEXIST || Exists(path_)) {  // the new trace replaces the old one
      ::unlink(aside.c_str());
      return false;
    }
    if (::rename(aside.c_str(), path_.c_str()) == 0) return true;  // no hard links here
    std::fprintf(stderr, "tracesmith: warning: the previous %s is kept as %s (%s)\n", path_.c_str(),
                 aside.c_str(), std::strerror(errno));
    return false;
  }

 private:
  std::string path_, aside_;
};

// Files of this run: FILE, <stem>.pid*<ext>, <stem>.rank*<ext>, written since `since`.
std::vector<std::string> FindOutputs(const std::string& output, time_t since) {
  std::vector<std::string> files;
  if (Exists(output)) files.push_back(output);
  std::string dir = ".", base = output;
  if (size_t slash = output.rfind('/'); slash != std::string::npos) {
    dir = output.substr(0, slash);
    base = output.substr(slash + 1);
  }
  std::string stem = base, ext;
  if (size_t dot = base.rfind('.'); dot != std::string::npos && dot > 0) {
    stem = base.substr(0, dot);
    ext = base.substr(dot);
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return files;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    for (const char* tag : {".pid", ".rank"}) {
      std::string prefix = stem + tag;
      if (name.size() <= prefix.size() + ext.size() || name.rfind(prefix, 0) != 0) continue;
      if (name.compare(name.size() - ext.size(), ext.size(), ext) != 0) continue;
      std::string path = dir + "/" + name;
      struct stat sb;
      if (::stat(path.c_str(), &sb) == 0 && sb.st_mtime >= since) files.push_back(path);
    }
  }
  closedir(d);
  // The named file first, then the other processes' files in name order.
  // Numbers as numbers: rank2 before rank10.
  auto natural = [](const std::string& a, const std::string& b) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      if (std::isdigit(uint8_t(a[i])) && std::isdigit(uint8_t(b[j]))) {
        size_t ie = i, je = j;
        while (ie < a.size() && std::isdigit(uint8_t(a[ie]))) ++ie;
        while (je < b.size() && std::isdigit(uint8_t(b[je]))) ++je;
        const std::string_view na(a.data() + i, ie - i), nb(b.data() + j, je - j);
        if (na.size() != nb.size()) return na.size() < nb.size();  // no leading zeros in pids
        if (na != nb) return na < nb;
        i = ie, j = je;
      } else {
        if (a[i] != b[j]) return a[i] < b[j];
        ++i, ++j;
      }
    }
    return a.size() - i < b.size() - j;
  };
  std::sort(files.begin() + (Exists(output) ? 1 : 0), files.end(), natural);
  return files;
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

// Larger traces are left to `tracesmith symbolize` (it holds the whole trace
// in memory while it rewrites it).
constexpr uint64_t kAutoSymbolizeMaxBytes = 1ull << 30;

// Native frames get function names now, on the machine whose modules made
// them (nsys does the same at the end of a run): the trace then reads with
// names anywhere. Only a complete, undamaged trace is rewritten (atomically:
// written beside and renamed); anything else stays as the capture left it.
void SymbolizeOutput(const std::string& path, bool quiet) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return;
  auto say = [&](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "tracesmith: %s\n", line.c_str());
  };
  if (uint64_t(st.st_size) > kAutoSymbolizeMaxBytes) {
    say(StrFormat("%s: %s, not symbolized here; run: tracesmith symbolize %s", path.c_str(),
                  HumanBytes(uint64_t(st.st_size)).c_str(), path.c_str()));
    return;
  }
  // Replay payloads (--replay-capture) are raw chunks that a model rewrite
  // would not carry over: such a trace is left as written.
  if (HasReplayPayloads(path)) {
    say(
        StrFormat("%s holds replay payloads: not rewritten to add symbols (tracesmith "
                  "symbolize %s -o OUT names them in a copy without the payloads)",
                  path.c_str(), path.c_str()));
    return;
  }
  format::ReadReport report;
  auto trace = format::ReadTraceFile(path, &report);
  if (!trace.ok() || !report.clean() || !report.indexed) {
    say(
        StrFormat("%s is unfinished or damaged: not rewritten to add symbols (tracesmith "
                  "symbolize %s -o OUT can)",
                  path.c_str(), path.c_str()));
    return;
  }
  if (trace->Rows<model::Frame>().empty()) return;  // no stacks
  auto stats = capture::stacks::Symbolize(&*trace);
  if (!stats.ok() || stats->native_frames == 0 || stats->with_function == 0) return;
  if (Status w = format::WriteTraceFile(*trace, path); !w.ok()) {
    say(StrFormat("%s: symbols not written: %s", path.c_str(), w.ToString().c_str()));
    return;
  }
  say(StrFormat("%s: %llu of %llu native frames named (--no-symbolize: leave them unnamed)",
                path.c_str(), static_cast<unsigned long long>(stats->with_function),
                static_cast<unsigned long long>(stats->native_frames)));
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
  if (a.command.empty()) {
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
  if (!a.dump_raw.empty()) o.dump_raw_dir = Absolute(a.dump_raw);
  if (Status st = capture::ValidateStackMode(a.stacks); !st.ok()) return ReportError(st);
  if (a.stack_depth < 1 || a.stack_depth > 256)
    return ReportError(InvalidArgument("--stack-depth must be in [1, 256]"));
  o.stacks = a.stacks;
  o.stack_depth = a.stack_depth;
  if (auto f = capture::ParseReplayFilter(a.replay_capture); !f.ok())
    return ReportError(f.status());
  o.replay_capture = a.replay_capture;
  o.replay_max_mb = a.replay_max_mb;
  o.replay_max_launches = a.replay_max_launches;
  if (a.replay_memory != "params" && a.replay_memory != "all")
    return ReportError(
        InvalidArgument("--replay-memory: '" + a.replay_memory + "' is not params or all"));
  if (auto r = capture::ParseDeviceRanges(a.replay_ranges); !r.ok()) return ReportError(r.status());
  o.replay_memory = a.replay_memory;
  o.replay_ranges = a.replay_ranges;
  // The injection library parses what the child receives: anything it would
  // refuse (and then leave the program unprofiled) is refused here, up front.
  if (auto check = capture::OptionsFromEnv(capture::OptionsToEnv(o)); !check.ok())
    return ReportError(InvalidArgument(OptionMessage(check.status().message())));

  // Only a regular file is ever replaced (never a directory or a device).
  if (Status st = CheckOutputPath(o.output); !st.ok()) return ReportError(st);
  if (Exists(o.output) && !a.force)
    return ReportError(InvalidArgument(o.output + ": file exists (use --force to overwrite)"));
  o.output = Absolute(o.output);
  // The injection library claims FILE only when it does not exist.
  o.overwrite = false;

  std::string inject;
#ifdef TS_HAVE_CUDA
  auto found = FindInjectLibrary();
  if (!found.ok()) return ReportError(found.status());
  inject = *found;
#else
  std::fprintf(stderr,
               "tracesmith: warning: this tracesmith was built without CUDA/CUPTI support "
               "(TS_CUDA=OFF or no CUDA toolkit): running the command unprofiled\n");
#endif
  // --force: the old trace is set aside, not deleted, and comes back unless
  // the run writes a new one (a command that never initialises CUDA).
  auto previous = PreviousTrace::SetAside(o.output);
  if (!previous.ok()) return ReportError(previous.status());

  time_t started_at = time(nullptr) - 1;
  auto t0 = std::chrono::steady_clock::now();
  const pid_t parent = getpid();
  SignalForwarder forwarder;
  pid_t child = fork();
  if (child < 0) {
    Status st = IoError(std::string("fork failed: ") + std::strerror(errno));
    forwarder.Stop();
    forwarder.Release();
    previous->Settle();
    return ReportError(st);
  }
  if (child == 0) {
    if (!inject.empty()) {
      for (const std::string& k : capture::OptionEnvNames()) unsetenv(k.c_str());
      for (const auto& [k, v] : capture::OptionsToEnv(o)) setenv(k.c_str(), v.c_str(), 1);
      setenv("CUDA_INJECTION64_PATH", inject.c_str(), 1);
      // NVTX calls reach CUPTI through our library (it forwards to libcupti).
      if ((o.groups & capture::kGroupNvtx) || o.range == capture::CaptureRange::kNvtx)
        setenv("NVTX_INJECTION64_PATH", inject.c_str(), 0);
    }
    std::vector<char*> argv;
    for (auto& s : a.command) argv.push_back(s.data());
    argv.push_back(nullptr);
    forwarder.PrepareChild(parent);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "tracesmith: error: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  forwarder.Start(child);
  // The command is reaped only after forwarding stops: until then its pid
  // cannot be reused, so a signal forwarded late reaches nobody else.
  siginfo_t ended;
  while (waitid(P_PID, child, &ended, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  forwarder.Stop();
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool kept_previous = previous->Settle();
  // A signal that came after the command ended is tracesmith's own and may
  // end it here, once --force's old trace has been settled.
  forwarder.Release();

  std::vector<std::string> files =
      inject.empty() ? std::vector<std::string>{} : FindOutputs(o.output, started_at);
  if (kept_previous && !files.empty() && files.front() == o.output)  // not of this run
    files.erase(files.begin());
  if (!a.no_symbolize && a.stacks != "none")
    for (const auto& f : files) SymbolizeOutput(f, a.quiet);

  if (!a.quiet) {
    if (WIFEXITED(status)) {
      std::fprintf(stderr, "tracesmith: command exited with code %d after %.3f s\n",
                   WEXITSTATUS(status), seconds);
    } else if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "tracesmith: command was killed by signal %d (%s) after %.3f s\n",
                   WTERMSIG(status), strsignal(WTERMSIG(status)), seconds);
    }
    if (kept_previous)
      std::fprintf(stderr, "tracesmith: no new trace was written: the previous %s is kept\n",
                   o.output.c_str());
    if (files.empty()) {
      std::fprintf(
          stderr,
          "tracesmith: no GPU activity was seen: no process of the command initialised "
          "CUDA%s, so no trace was written\n",
          inject.empty() ? " under a CUDA-enabled tracesmith" : " (or no GPU/driver is available)");
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
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
  }
  return kExitError;
}

void AddProfileOptions(CLI::App* sub, ProfileArgs& a) {
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
  sub->add_option("--replay-capture", a.replay_capture,
                  "Also record kernel launches with their module, parameters and memory before "
                  "and after, for `tracesmith replay`: all, kernel:<regex>, launch:<N> or "
                  "launch:<A>-<B> (synchronizes at each recorded launch)");
  sub->add_option("--replay-max-mb", a.replay_max_mb,
                  "Replay capture: memory images in all (later launches are skipped)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 24));
  sub->add_option("--replay-memory", a.replay_memory,
                  "Replay capture: the allocations the parameters point into (params) or every "
                  "live device allocation (all: cuMemAlloc, cuMemAllocAsync/FromPool, "
                  "cuMemAllocManaged, cuMemAllocPitch)")
      ->capture_default_str();
  sub->add_option("--replay-ranges", a.replay_ranges,
                  "Replay capture: also these device ranges, ADDR:SIZE[,ADDR:SIZE...]");
  sub->add_option("--replay-max-launches", a.replay_max_launches,
                  "Replay capture: launches recorded at most")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  sub->add_option("--dump-raw", a.dump_raw,
                  "Debug: also write raw CUPTI activity records to DIR (test fixtures)");
  sub->add_option("command", a.command, "The command to profile, after --")->expected(-1);
}

}  // namespace

void AddProfileCommand(CLI::App& app, CommandList& commands) {
  static ProfileArgs profile_args;
  auto* profile = app.add_subcommand(
      "profile", "Run a CUDA program and record its GPU activity to an SBT trace");
  profile->add_option("-o,--output", profile_args.output,
                      "Trace file (default: trace<N>.sbt); other processes of the program write "
                      "<stem>.pid<PID>.sbt");
  AddProfileOptions(profile, profile_args);
  profile->footer(kSignalsHelp);
  commands.emplace_back(profile, [] { return RunProfile(profile_args, false); });

  static ProfileArgs record_args;
  auto* record = app.add_subcommand("record", "Same as profile, with -o required");
  record->add_option("-o,--output", record_args.output, "Trace file")->required();
  AddProfileOptions(record, record_args);
  record->footer(kSignalsHelp);
  commands.emplace_back(record, [] { return RunProfile(record_args, true); });
}

}  // namespace tracesmith::cli
