// Runs the `tracesmith` binary under test (testing::TracesmithBin()) as a child
// process and measures its own peak RSS (fork/exec and wait4), for the tests
// that hold commands to bounded memory (issue #21 item 8).
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "testing/temp_dir.h"

namespace tracesmith {

// Runs `tracesmith ARGS...` and returns its stdout; *peak_kib: the child's
// own peak RSS.
inline std::string RunMeasured(const testing::TempDir& dir, std::vector<std::string> args,
                               long* peak_kib) {
  const std::string out = dir / "out.txt";
  std::vector<char*> argv = {const_cast<char*>(::tracesmith::testing::TracesmithBin())};
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const bool under_asan = ::tracesmith::testing::ProductUnderAsan();
  pid_t pid = fork();
  if (pid == 0) {
    if (under_asan) {
      // ASan keeps freed memory in a quarantine (256 MB by default), which
      // would count as the command's own.
      const char* asan = getenv("ASAN_OPTIONS");
      std::string options = std::string(asan ? asan : "") + ":quarantine_size_mb=16";
      setenv("ASAN_OPTIONS", options.c_str(), 1);
    }
    FILE* f = freopen(out.c_str(), "w", stdout);
    (void)f;
    execv(::tracesmith::testing::TracesmithBin(), argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  EXPECT_EQ(wait4(pid, &status, 0, &usage), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  *peak_kib = usage.ru_maxrss;
  return ReadOrMissing(out);
}

}  // namespace tracesmith
