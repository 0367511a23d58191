// Runs the `tracesmith` binary under test (testing::TracesmithBin()) as a child
// process and measures its own peak RSS, for the tests that hold commands to
// bounded memory (issue #21 item 8). The command is started by the small
// helper ts_peak_rss (peak_rss.cc), which reports its child's ru_maxrss: a
// command forked from the test itself would be charged for the test's pages.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "testing/temp_dir.h"

namespace tracesmith {

// Runs `tracesmith ARGS...` and returns its stdout; *peak_kib: the command's
// own peak RSS.
inline std::string RunMeasured(const testing::TempDir& dir, std::vector<std::string> args,
                               long* peak_kib) {
  const std::string out = dir / "out.txt";
  std::string probe = ::tracesmith::testing::TestBinaryDir() + "/ts_peak_rss";
  std::string kib_file = dir / "peak_kib.txt";
  std::vector<char*> argv = {probe.data(), kib_file.data(),
                             const_cast<char*>(::tracesmith::testing::TracesmithBin())};
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
    execv(probe.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  const std::string kib = ReadOrMissing(kib_file);
  *peak_kib = std::strtol(kib.c_str(), nullptr, 10);
  EXPECT_GT(*peak_kib, 0) << "no peak from " << probe << ": " << kib;
  std::remove(kib_file.c_str());
  return ReadOrMissing(out);
}

}  // namespace tracesmith
