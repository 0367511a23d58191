#include "tracesmith/session/finish_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "tracesmith/format/job_file_names.h"

extern char** environ;

namespace tracesmith::session {
namespace {

bool Executable(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

std::string RealPath(const std::string& path) {
  char real[PATH_MAX];
  return realpath(path.c_str(), real) ? std::string(real) : path;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string FindCli() {
  if (const char* env = getenv("TRACESMITH_CLI"); env && *env)
    return Executable(env) ? RealPath(env) : "";
  // The library (libtracesmith-inject.so) or program this code is in.
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&FindCli), &info) && info.dli_fname) {
    std::string self = RealPath(info.dli_fname);
    const std::string dir = self.substr(0, self.rfind('/'));
    for (const std::string& c : {dir + "/../bin/tracesmith", dir + "/tracesmith"})
      if (Executable(c)) return RealPath(c);
  }
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    const std::string c = dirs.substr(at, end - at) + "/tracesmith";
    if (end > at && Executable(c)) return RealPath(c);
    at = end + 1;
  }
  return "";
}

StatusOr<FinishRun> FinishStoppedCapture(const std::string& path,
                                         const capture::CaptureOptions& options,
                                         const std::string& cli) {
  FinishRun run;
  struct stat st;
  if (path.empty() || stat(path.c_str(), &st) != 0) return run;  // nothing was written
  if (!options.symbolize && !IsDirectory(format::CubinDirOf(path))) return run;
  const std::string later = "tracesmith symbolize " + path;
  run.cli = cli.empty() ? FindCli() : cli;
  if (!Executable(run.cli))
    return NotFound(
        "native frames left unnamed: the tracesmith command was not found (beside the capture "
        "library, in PATH, or set TRACESMITH_CLI); run: " +
        later);
  std::vector<std::string> args = {run.cli,        "symbolize",
                                   path,           "--capture-end",
                                   "--time-limit", std::to_string(options.symbolize_time_limit_ns)};
  if (!options.symbolize) args.push_back("--no-names");
  if (options.quiet) args.push_back("-q");
  for (const std::string& a : args) run.command += (run.command.empty() ? "" : " ") + a;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // The program's stdout stays its own; the child's lines go to stderr.
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (options.quiet) posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return IoError(StrFormat("native frames left unnamed: cannot run %s: %s; run: %s",
                             run.cli.c_str(), std::strerror(rc), later.c_str()));
  run.ran = true;

  // Waited for within the time limit and the grace (no limit: until it ends).
  using Clock = std::chrono::steady_clock;
  const double limit_s = double(options.symbolize_time_limit_ns) / 1e9;
  const bool bounded = options.symbolize_time_limit_ns > 0;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                         bounded ? limit_s + kFinishGraceSeconds : 0));
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR)
      return Internal(StrFormat("waiting for %s: %s", run.command.c_str(), std::strerror(errno)));
    if (bounded && Clock::now() > deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      run.exit_code = -1;
      return FailedPrecondition(
          StrFormat("native frames left unnamed: %s ran past its time limit (%.0f s + %.0f s) "
                    "and was stopped; run: %s",
                    run.command.c_str(), limit_s, kFinishGraceSeconds, later.c_str()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (run.exit_code != 0)
    return FailedPrecondition(StrFormat("native frames left unnamed: %s exited with %d; run: %s",
                                        run.command.c_str(), run.exit_code, later.c_str()));
  return run;
}

}  // namespace tracesmith::session
