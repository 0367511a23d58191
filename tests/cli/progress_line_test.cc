// ProgressLine: the command's thread sets the phase while a ticker thread
// rewrites the line 4 times a second; Done() stops the ticker, and a later
// Show() starts it again. On a pseudo-terminal (the line shows only on a
// terminal). Run under ThreadSanitizer (label tsan); the end-to-end check is
// Progress.ALineOnATerminalNeverOnAPipe (job_commands_test.cc).
#include "cli/progress_line.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace tracesmith::cli {
namespace {

TEST(ProgressLine, PhasesSetWhileTheTickerRewritesTheLine) {
  int master = -1, slave = -1;
  if (openpty(&master, &slave, nullptr, nullptr, nullptr) != 0)
    GTEST_SKIP() << "no pseudo-terminal here";
  std::string seen;
  std::atomic<bool> reading{true};
  std::thread reader([&] {  // the terminal: drained, so that writes never block
    char buf[4096];
    while (reading.load()) {
      const ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) break;
      seen.append(buf, size_t(n));
    }
  });
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ASSERT_EQ(::dup2(slave, STDERR_FILENO), STDERR_FILENO);
  ::setenv("TRACESMITH_PROGRESS_DELAY_S", "0", 1);
  {
    ProgressLine line("analyze", /*quiet=*/false);
    ASSERT_TRUE(line.on());
    for (int round = 0; round < 2; ++round) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
      for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
        line.Show(round ? "writing" : "reading", (i % 100) / 100.0);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      line.Done();  // and Show() again in the next round
    }
  }  // (the destructor's Done: idempotent)
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::unsetenv("TRACESMITH_PROGRESS_DELAY_S");
  ::close(slave);  // the reader's read ends (EIO once no slave is open)
  reading.store(false);
  reader.join();
  ::close(master);
  EXPECT_NE(seen.find("tracesmith: analyze reading"), std::string::npos) << seen.substr(0, 200);
  EXPECT_NE(seen.find("tracesmith: analyze writing"), std::string::npos);
  EXPECT_NE(seen.find("\r\033[K"), std::string::npos);  // erased
}

}  // namespace
}  // namespace tracesmith::cli
