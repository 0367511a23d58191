// RunUnderCapture, FindOutputs and PreviousTrace (session/run_command.h,
// session/run_outputs.h): running a command as `tracesmith profile` and the
// Python package do, without a GPU. The commands are shell one-liners that
// never load CUDA; where an injection library must be named, any existing
// file stands in for it (only the CUDA driver would open it). Every wait is
// bounded: a failure never hangs.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/session/run_command.h"
#include "tracesmith/session/run_outputs.h"
#include "tracesmith/session/session.h"

// The in-process capture's old name still names it (session.h).
static_assert(std::is_same_v<tracesmith::capture::Session, tracesmith::session::Session>);

namespace tracesmith::session {
namespace {

using testing::TempDir;

std::string ReadOrMissing(const std::string& path) {
  auto text = ReadFileToString(path);
  return text.ok() ? *text : "<missing>";
}

// Runs the test in `dir` and comes back to where it was, whatever happens.
class InDirectory {
 public:
  explicit InDirectory(const std::string& dir) {
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd))) saved_ = cwd;
    ok_ = chdir(dir.c_str()) == 0;
  }
  ~InDirectory() {
    if (!saved_.empty()) (void)!chdir(saved_.c_str());
  }
  bool ok() const { return ok_; }

 private:
  std::string saved_;
  bool ok_ = false;
};

RunOptions Shell(const std::string& script, const std::string& output) {
  RunOptions o;
  o.command = {"/bin/sh", "-c", script};
  o.capture.output = output;
  return o;
}

TEST(RunUnderCapture, PassesTheExitCodeThrough) {
  TempDir dir;
  auto r = RunUnderCapture(Shell("exit 3", dir / "t.sbt"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->term_signal, 0);
  EXPECT_GE(r->seconds, 0.0);
  EXPECT_EQ(r->output, dir / "t.sbt");
  EXPECT_TRUE(r->files.empty());
  EXPECT_FALSE(r->kept_previous);
  EXPECT_TRUE(r->previous_trace.ok());
}

TEST(RunUnderCapture, ReportsTheSignalThatKilledTheCommand) {
  TempDir dir;
  auto r = RunUnderCapture(Shell("kill -KILL $$", dir / "t.sbt"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->term_signal, SIGKILL);
  EXPECT_EQ(r->exit_code, 0);
}

TEST(RunUnderCapture, ACommandThatCannotRunExitsWith127) {
  TempDir dir;
  RunOptions o;
  o.command = {dir / "no-such-command"};
  o.capture.output = dir / "t.sbt";
  auto r = RunUnderCapture(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_EQ(r->term_signal, 0);
  // Looked up in PATH, as a shell does.
  o.command = {"tracesmith-test-no-such-command-in-path"};
  r = RunUnderCapture(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 127);
  o.command = {"true"};
  r = RunUnderCapture(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0);
}

TEST(RunUnderCapture, RefusesBeforeRunningAnything) {
  TempDir dir;
  const std::string ran = dir / "ran";
  RunOptions none;
  none.capture.output = dir / "t.sbt";
  EXPECT_EQ(RunUnderCapture(none).status().code(), StatusCode::kInvalidArgument);

  // An existing output without overwrite, a directory even with it.
  ASSERT_TRUE(WriteStringToFile(dir / "t.sbt", "old").ok());
  RunOptions o = Shell("touch " + ran, dir / "t.sbt");
  auto r = RunUnderCapture(o);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("file exists"), std::string::npos) << r.status().ToString();
  ASSERT_EQ(::mkdir((dir / "d").c_str(), 0755), 0);
  o.capture.output = dir / "d";
  o.capture.overwrite = true;
  EXPECT_EQ(RunUnderCapture(o).status().code(), StatusCode::kInvalidArgument);

  // Options the injection library would refuse in the child.
  o.capture.output = dir / "u.sbt";
  o.capture.buffer_mb = 99999999;
  r = RunUnderCapture(o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(capture::kEnvBufferMb), std::string::npos)
      << r.status().ToString();

  EXPECT_EQ(ReadOrMissing(ran), "<missing>") << "the command ran";
  EXPECT_EQ(ReadOrMissing(dir / "t.sbt"), "old");
}

// The command gets the options and the injection library, and none of the
// option variables of this process's own environment.
TEST(RunUnderCapture, TheCommandGetsTheCaptureEnvironment) {
  TempDir dir;
  const std::string inject = dir / "libfake-inject.so";
  ASSERT_TRUE(WriteStringToFile(inject, "").ok());
  ASSERT_EQ(setenv(capture::kEnvDuration, "5000000", 1), 0);
  ASSERT_EQ(setenv(capture::kEnvReplayCapture, "all", 1), 0);
  ASSERT_EQ(unsetenv("NVTX_INJECTION64_PATH"), 0);
  InDirectory in(dir.path());
  ASSERT_TRUE(in.ok());
  RunOptions o = Shell(
      "echo \"[$CUDA_INJECTION64_PATH][$NVTX_INJECTION64_PATH][$TRACESMITH_OUTPUT]"
      "[$TRACESMITH_DURATION][$TRACESMITH_REPLAY_CAPTURE][$TRACESMITH_STACK_DEPTH]\" > env.txt",
      "t.sbt");  // relative: made absolute
  o.capture.stack_depth = 17;
  o.inject_library = inject;
  auto r = RunUnderCapture(o);
  unsetenv(capture::kEnvDuration);
  unsetenv(capture::kEnvReplayCapture);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->output, dir / "t.sbt");
  EXPECT_EQ(ReadOrMissing(dir / "env.txt"),
            "[" + inject + "][" + inject + "][" + (dir / "t.sbt") + "][][][17]\n");

  // Without an injection library the environment is left as it is.
  ASSERT_EQ(setenv(capture::kEnvDuration, "5000000", 1), 0);
  o.inject_library.clear();
  o.command = {"/bin/sh", "-c",
               "echo \"[$CUDA_INJECTION64_PATH][$TRACESMITH_DURATION]\" > env.txt"};
  r = RunUnderCapture(o);
  unsetenv(capture::kEnvDuration);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadOrMissing(dir / "env.txt"), "[][5000000]\n");
}

// The files of the run: what the processes of the command wrote, as the
// injection library names them (here the shell writes them).
TEST(RunUnderCapture, ReturnsTheFilesOfTheRun) {
  TempDir dir;
  const std::string inject = dir / "libfake-inject.so";
  ASSERT_TRUE(WriteStringToFile(inject, "").ok());
  const std::string t = dir / "t.sbt";
  RunOptions o = Shell("echo a > " + t + "; echo b > " + (dir / "t.rank10.sbt") + "; echo c > " +
                           (dir / "t.rank2.sbt") + "; echo d > " + (dir / "u.rank1.sbt"),
                       t);
  o.inject_library = inject;
  auto r = RunUnderCapture(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files, (std::vector<std::string>{t, dir / "t.rank2.sbt", dir / "t.rank10.sbt"}));
  // Unprofiled (no injection library): no files are claimed.
  ASSERT_EQ(::unlink(t.c_str()), 0);
  o.inject_library.clear();
  r = RunUnderCapture(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->files.empty());
}

// overwrite: the old trace survives a run that writes none and is replaced
// by one that does; nothing is left beside it either way.
TEST(RunUnderCapture, OverwriteKeepsThePreviousTraceUnlessANewOneIsWritten) {
  TempDir dir;
  const std::string inject = dir / "libfake-inject.so";
  ASSERT_TRUE(WriteStringToFile(inject, "").ok());
  const std::string t = dir / "t.sbt";
  ASSERT_TRUE(WriteStringToFile(t, "old").ok());
  RunOptions o = Shell("test -e " + t + " && exit 9; exit 7", t);  // FILE is free for the run
  o.capture.overwrite = true;
  o.inject_library = inject;
  auto r = RunUnderCapture(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_TRUE(r->kept_previous);
  EXPECT_TRUE(r->files.empty());  // the old FILE is not of this run
  EXPECT_EQ(ReadOrMissing(t), "old");
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"libfake-inject.so", "t.sbt"}));

  o.command = {"/bin/sh", "-c", "echo new > " + t};
  r = RunUnderCapture(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->kept_previous);
  EXPECT_EQ(r->files, std::vector<std::string>{t});
  EXPECT_EQ(ReadOrMissing(t), "new\n");
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"libfake-inject.so", "t.sbt"}));
}

// SIGTERM and SIGINT sent to this process while the command runs reach the
// command; the caller then gets the command's status and lives on.
class RunUnderCaptureSignals : public ::testing::TestWithParam<int> {};

TEST_P(RunUnderCaptureSignals, ASignalToTheCallerReachesTheCommand) {
  const int sig = GetParam();
  // As a fresh process has it: a runner started in the background ignores
  // SIGINT, and ignored signals are rightly left alone.
  struct sigaction dfl {
  }, saved{};
  dfl.sa_handler = SIG_DFL;
  ASSERT_EQ(sigaction(sig, &dfl, &saved), 0);
  TempDir dir;
  const std::string pid_file = dir / "command.pid";
  // Sends the signal once the command runs; kills the command if it is still
  // there after 10 s (then the test fails instead of hanging).
  std::thread sender([&] {
    // This thread never takes the signal: it goes to the thread in
    // RunUnderCapture, blocked there until the forwarding is set up.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    pid_t command = 0;
    while (command <= 0 && std::chrono::steady_clock::now() < deadline) {
      auto text = ReadFileToString(pid_file);
      if (text.ok() && !text->empty() && text->back() == '\n') command = std::atoi(text->c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (command <= 0) return;
    kill(getpid(), sig);
    while (kill(command, 0) == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (kill(command, 0) == 0) kill(command, SIGKILL);
  });
  auto r = RunUnderCapture(Shell("echo $$ > " + pid_file + "; exec sleep 30", dir / "t.sbt"));
  sender.join();
  sigaction(sig, &saved, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->term_signal, sig) << "exit code " << r->exit_code;
  EXPECT_LT(r->seconds, 10.0);
}

INSTANTIATE_TEST_SUITE_P(Signals, RunUnderCaptureSignals, ::testing::Values(SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGTERM ? "SIGTERM" : "SIGINT");
                         });

TEST(FindInjectLibrary, TheVariableFirstThenBesideTheBinary) {
  TempDir dir;
  ASSERT_EQ(::mkdir((dir / "bin").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir / "lib").c_str(), 0755), 0);
  unsetenv("TRACESMITH_INJECT_LIB");
  auto none = FindInjectLibrary(dir / "bin");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("TRACESMITH_INJECT_LIB"), std::string::npos);
  const std::string lib = dir / "lib/libtracesmith-inject.so";
  ASSERT_TRUE(WriteStringToFile(lib, "").ok());
  auto found = FindInjectLibrary(dir / "bin");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  char real[4096];
  ASSERT_NE(realpath(lib.c_str(), real), nullptr);
  EXPECT_EQ(*found, std::string(real));

  const std::string other = dir / "other.so";
  ASSERT_TRUE(WriteStringToFile(other, "").ok());
  setenv("TRACESMITH_INJECT_LIB", other.c_str(), 1);
  found = FindInjectLibrary(dir / "bin");
  EXPECT_TRUE(found.ok() && *found == other) << found.status().ToString();
  setenv("TRACESMITH_INJECT_LIB", (dir / "missing.so").c_str(), 1);
  EXPECT_EQ(FindInjectLibrary(dir / "bin").status().code(), StatusCode::kNotFound);
  unsetenv("TRACESMITH_INJECT_LIB");
}

TEST(FindOutputs, FindsThePerProcessFilesOfTheRunInNaturalOrder) {
  TempDir dir;
  const std::string t = dir / "t.sbt";
  const time_t since = time(nullptr) - 1;
  for (const char* name :
       {"t.sbt", "t.pid123.sbt", "t.rank10.sbt", "t.rank2.sbt", "t.rank1.sbt", "t.pid7.sbt",
        "u.pid1.sbt", "t.pid1.json", "t.sbt.bak", "t.pid.sbt", "tt.pid5.sbt"})
    ASSERT_TRUE(WriteStringToFile(dir / name, "x").ok()) << name;
  // Written before the run: an earlier run's file.
  struct utimbuf old = {since - 100, since - 100};
  ASSERT_EQ(utime((dir / "t.pid7.sbt").c_str(), &old), 0);
  EXPECT_EQ(FindOutputs(t, since),
            (std::vector<std::string>{t, dir / "t.pid123.sbt", dir / "t.rank1.sbt",
                                      dir / "t.rank2.sbt", dir / "t.rank10.sbt"}));
  // FILE itself counts whenever it exists; the inverse of PerProcessOutputPath.
  ASSERT_EQ(::unlink(t.c_str()), 0);
  EXPECT_EQ(FindOutputs(t, since).front(), format::PerProcessOutputPath(t, 123, -1));
  EXPECT_EQ(FindOutputs(t, since).back(), format::PerProcessOutputPath(t, 0, 10));
  EXPECT_TRUE(FindOutputs(dir / "none/t.sbt", since).empty());
}

TEST(PreviousTrace, PutsTheOldFileBackUnlessANewOneWasWritten) {
  TempDir dir;
  const std::string t = dir / "t.sbt";
  auto nothing = PreviousTrace::SetAside(t);  // no file: nothing to do
  ASSERT_TRUE(nothing.ok());
  EXPECT_FALSE(nothing->pending());
  EXPECT_FALSE(nothing->Settle().value());

  ASSERT_TRUE(WriteStringToFile(t, "old").ok());
  auto aside = PreviousTrace::SetAside(t);
  ASSERT_TRUE(aside.ok()) << aside.status().ToString();
  EXPECT_TRUE(aside->pending());
  EXPECT_EQ(ReadOrMissing(t), "<missing>");
  EXPECT_EQ(ReadOrMissing(aside->aside_path()), "old");
  EXPECT_EQ(aside->aside_path().rfind(dir / ".t.sbt.old-", 0), 0u) << aside->aside_path();
  auto kept = aside->Settle();
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_TRUE(*kept);
  EXPECT_EQ(ReadOrMissing(t), "old");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"t.sbt"});
  EXPECT_FALSE(aside->Settle().value());  // once only

  aside = PreviousTrace::SetAside(t);
  ASSERT_TRUE(aside.ok());
  ASSERT_TRUE(WriteStringToFile(t, "new").ok());
  kept = aside->Settle();
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(*kept);
  EXPECT_EQ(ReadOrMissing(t), "new");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"t.sbt"});

  // Never settled: settles when destroyed (also after a move).
  {
    auto a = PreviousTrace::SetAside(t);
    ASSERT_TRUE(a.ok());
    PreviousTrace moved = std::move(*a);
    EXPECT_FALSE(a->pending());
    EXPECT_TRUE(moved.pending());
    EXPECT_EQ(ReadOrMissing(t), "<missing>");
  }
  EXPECT_EQ(ReadOrMissing(t), "new");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"t.sbt"});
}

}  // namespace
}  // namespace tracesmith::session
