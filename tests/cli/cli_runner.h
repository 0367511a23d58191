// Runs the `tracesmith` binary under test (testing::TracesmithBin(), testing/build_paths.h) with a
// shell command line and collects its exit status and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "testing/build_paths.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith {

struct Result {
  int status;
  std::string out;  // stdout + stderr
};

// `args` is appended to the binary's path in a /bin/sh command line;
// `env` (e.g. "VAR=value ") is put before it.
inline Result RunTracesmith(const std::string& args, const std::string& env = "") {
  std::string cmd =
      env + std::string(::tracesmith::testing::TracesmithBin()) + " " + args + " 2>&1";
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// Runs a shell command line on a pseudo-terminal (util-linux `script`) and
// returns what the terminal showed, stdout and stderr together: for the
// progress line, which shows only when stderr is a terminal. Needs `script`
// (check with HaveScript()).
inline bool HaveScript() { return std::system("command -v script >/dev/null 2>&1") == 0; }
inline std::string RunInTerminal(const std::string& command) {
  std::string out;
  FILE* p = ::popen(("script -qec '" + command + "' /dev/null 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// A file's bytes, or "<missing>" when it cannot be read (for comparisons
// that must show what is there).
inline std::string ReadOrMissing(const std::string& path) {
  auto s = ReadFileToString(path);
  return s.ok() ? *s : "<missing>";
}

}  // namespace tracesmith
