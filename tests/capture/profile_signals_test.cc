// `tracesmith profile` and signals sent to tracesmith alone (issue #21 item 9):
// they reach the command, tracesmith waits for it and ends with its status,
// and a tracesmith killed outright takes the command along. The command is
// `sleep 30` (through sh, which writes its pid first); no CUDA is involved, so
// no trace is written. Every wait is bounded: a failure never hangs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "testing/build_paths.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith {
namespace {

using Clock = std::chrono::steady_clock;
using testing::TempDir;

// No process with this pid, or only its zombie: it has ended (an orphan's
// zombie waits for whoever adopted it to reap it).
bool Ended(pid_t pid) {
  auto stat = ReadFileToString("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return true;
  size_t paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() || (*stat)[paren + 2] == 'Z' ||
         (*stat)[paren + 2] == 'X';
}

bool EndsWithin(pid_t pid, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (!Ended(pid)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class ProfileSignalsTest : public ::testing::Test {
 protected:
  // Starts `tracesmith profile -- sh -c 'echo $$ > command.pid; exec sleep 30'`
  // and waits until the command runs. Signals are as a fresh terminal process
  // has them (a test runner started in the background ignores SIGINT, and
  // tracesmith rightly leaves ignored signals alone).
  void SetUp() override {
    const std::string log = dir_ / "tracesmith.log";
    std::vector<std::string> args = {::tracesmith::testing::TracesmithBin(),
                                     "profile",
                                     "-o",
                                     dir_ / "t.sbt",
                                     "--",
                                     "sh",
                                     "-c",
                                     "echo $$ > " + (dir_ / "command.pid") + "; exec sleep 30"};
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    // Any existing file: the command never loads CUDA, so it is never opened.
    std::string inject =
        std::string("TRACESMITH_INJECT_LIB=") + ::tracesmith::testing::TracesmithBin();
    std::vector<char*> envp = {inject.data()};
    for (char** e = environ; *e; ++e)
      if (std::string(*e).rfind("TRACESMITH_", 0) != 0) envp.push_back(*e);
    envp.push_back(nullptr);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(out, 0);
    tracesmith_ = fork();
    ASSERT_GE(tracesmith_, 0);
    if (tracesmith_ == 0) {
      for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(out);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (command_ <= 0 && Clock::now() < deadline) {
      auto text = ReadFileToString(dir_ / "command.pid");
      if (text.ok() && !text->empty() && text->back() == '\n') command_ = std::atoi(text->c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_GT(command_, 0) << "the command did not start";
  }

  // Nothing is left running, whatever the outcome.
  void TearDown() override {
    if (command_ > 0 && !Ended(command_)) kill(command_, SIGKILL);
    if (tracesmith_ > 0 && !reaped_) {
      kill(tracesmith_, SIGKILL);
      waitpid(tracesmith_, nullptr, 0);
    }
  }

  // tracesmith's wait status, or -1 if it is still running after `seconds`.
  int WaitForTracesmith(double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (Clock::now() < deadline) {
      if (waitpid(tracesmith_, &status, WNOHANG) == tracesmith_) {
        reaped_ = true;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  std::string Log() {
    auto text = ReadFileToString(dir_ / "tracesmith.log");
    return text.ok() ? *text : "";
  }

  TempDir dir_;
  pid_t tracesmith_ = -1;
  pid_t command_ = -1;
  bool reaped_ = false;
};

// Used to be ignored: tracesmith kept waiting for a command that never heard
// of it.
TEST_F(ProfileSignalsTest, SigintToTracesmithReachesTheCommand) {
  ASSERT_EQ(kill(tracesmith_, SIGINT), 0);
  EXPECT_TRUE(EndsWithin(command_, 5)) << "the command still runs";
  int status = WaitForTracesmith(5);
  ASSERT_NE(status, -1) << "tracesmith still runs";
  // The command died of SIGINT: tracesmith ends with the same signal, after
  // its summary.
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status << "\n" << Log();
  EXPECT_NE(Log().find("command was killed by signal 2"), std::string::npos) << Log();
}

TEST_F(ProfileSignalsTest, SigtermToTracesmithReachesTheCommand) {
  ASSERT_EQ(kill(tracesmith_, SIGTERM), 0);
  EXPECT_TRUE(EndsWithin(command_, 5)) << "the command still runs";
  int status = WaitForTracesmith(5);
  ASSERT_NE(status, -1) << "tracesmith still runs";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status << "\n" << Log();
  EXPECT_NE(Log().find("command was killed by signal 15"), std::string::npos) << Log();
}

// SIGKILL cannot be forwarded: the kernel sends the command SIGTERM when
// tracesmith dies (it used to run on, orphaned).
TEST_F(ProfileSignalsTest, KilledTracesmithTakesTheCommandAlong) {
  ASSERT_EQ(kill(tracesmith_, SIGKILL), 0);
  int status = WaitForTracesmith(5);
  ASSERT_NE(status, -1) << "tracesmith still runs";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_TRUE(EndsWithin(command_, 5)) << "the command was left running";
}

}  // namespace
}  // namespace tracesmith
