#include "tracesmith/session/run_command.h"
#include "tracesmith/base/file_util.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "signal_forwarder.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/session/run_outputs.h"

extern char** environ;

namespace tracesmith::session {
namespace {

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (!getcwd(cwd, sizeof(cwd))) return path;
  return std::string(cwd) + "/" + path;
}

std::string ExecutableDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The command's environment: this process's, with every option variable
// replaced by those of `options` (a stale one in the user's environment,
// say TRACESMITH_DURATION, cannot change the capture) and the injection
// library named. Built before fork(): the child of a multi-threaded caller
// must not allocate.
std::vector<std::string> CommandEnvironment(
    const capture::CaptureOptions& options, const std::string& inject,
    const std::vector<std::pair<std::string, std::string>>& defaults) {
  std::vector<std::string> env;
  if (inject.empty()) {  // unprofiled: the environment as it is
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    return env;
  }
  const std::map<std::string, std::string> set = capture::OptionsToEnv(options);
  std::set<std::string> replaced(capture::OptionEnvNames().begin(),
                                 capture::OptionEnvNames().end());
  for (const auto& [k, v] : set) replaced.insert(k);
  replaced.insert("CUDA_INJECTION64_PATH");
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (!replaced.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  env.push_back("CUDA_INJECTION64_PATH=" + inject);
  for (const auto& [k, v] : defaults)
    if (!getenv(k.c_str())) env.push_back(k + "=" + v);
  // NVTX calls reach CUPTI through our library (it forwards to libcupti); an
  // NVTX injection the user set already is left in place.
  if (((options.groups & capture::kGroupNvtx) || options.range == capture::CaptureRange::kNvtx) &&
      !getenv("NVTX_INJECTION64_PATH"))
    env.push_back("NVTX_INJECTION64_PATH=" + inject);
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

StatusOr<std::string> FindInjectLibrary(const std::string& bin_dir) {
  if (const char* env = getenv("TRACESMITH_INJECT_LIB"); env && *env) {
    if (!PathExists(env))
      return NotFound(std::string("TRACESMITH_INJECT_LIB=") + env + ": no such file");
    return Absolute(env);
  }
  for (const std::string& c :
       {bin_dir + "/../lib/" + kInjectLibName, bin_dir + "/" + kInjectLibName,
        bin_dir + "/../lib64/" + kInjectLibName}) {
    if (PathExists(c)) {
      char real[4096];
      return std::string(realpath(c.c_str(), real) ? real : c.c_str());
    }
  }
  return NotFound(std::string("cannot find ") + kInjectLibName + " next to " + bin_dir +
                  "/tracesmith (looked in ../lib and the same folder); set TRACESMITH_INJECT_LIB");
}

StatusOr<std::string> FindInjectLibrary() { return FindInjectLibrary(ExecutableDir()); }

StatusOr<RunResult> RunUnderCapture(const RunOptions& options) {
  if (options.command.empty()) return InvalidArgument("no command to run");
  capture::CaptureOptions o = options.capture;
  // The injection library parses what the child receives: anything it would
  // refuse (and then leave the program unprofiled) is refused here, up front.
  if (auto check = capture::OptionsFromEnv(capture::OptionsToEnv(o)); !check.ok())
    return InvalidArgument(check.status().message());
  // Only a regular file is ever replaced (never a directory or a device).
  RETURN_IF_ERROR(CheckOutputFile(o.output, {}, o.overwrite, "set overwrite to replace it"));
  RunResult result;
  result.output = o.output = Absolute(o.output);
  if (!o.dump_raw_dir.empty()) o.dump_raw_dir = Absolute(o.dump_raw_dir);
  // The injection library claims FILE only when it does not exist: an old
  // one is set aside below, so that it is claimed afresh.
  o.overwrite = false;

  std::vector<std::string> env =
      CommandEnvironment(o, options.inject_library, options.env_defaults);
  std::vector<std::string> args = options.command;
  std::vector<char*> envp = Pointers(env);
  std::vector<char*> argv = Pointers(args);

  // The old trace is set aside, not deleted, and comes back unless the run
  // writes a new one (a command that never initialises CUDA).
  ASSIGN_OR_RETURN(PreviousTrace previous, PreviousTrace::SetAside(o.output));

  const time_t started_at = time(nullptr) - 1;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t parent = getpid();
  SignalForwarder forwarder;
  pid_t child = fork();
  if (child < 0) {
    Status st = IoError(std::string("fork failed: ") + std::strerror(errno));
    forwarder.Stop();
    forwarder.Release();
    (void)previous.Settle();
    return st;
  }
  if (child == 0) {
    forwarder.PrepareChild(parent);
    execvpe(argv[0], argv.data(), envp.data());
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
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  StatusOr<bool> settled = previous.Settle();
  if (settled.ok())
    result.kept_previous = *settled;
  else
    result.previous_trace = settled.status();
  // A signal that came after the command ended is the caller's own and may
  // end it here, once the old trace has been settled.
  forwarder.Release();

  if (!options.inject_library.empty()) result.files = FindOutputs(o.output, started_at);
  if (result.kept_previous && !result.files.empty() &&
      result.files.front() == o.output)  // not of this run
    result.files.erase(result.files.begin());
  return result;
}

}  // namespace tracesmith::session
