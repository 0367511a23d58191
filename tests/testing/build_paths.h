// What the build put beside a test, and what kind of build it is, found at run
// time rather than compiled in: a test unit then compiles to the same object
// in the release and asan presets, and the second build takes the first's
// objects from ccache (tests/CMakeLists.txt, docs/testing.md).
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tracesmith::testing {

// The directory of the running test binary.
inline const std::string& TestBinaryDir() {
  static const std::string dir = [] {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
      std::fprintf(stderr, "test setup: cannot read /proc/self/exe: %s\n", ec.message().c_str());
      std::abort();
    }
    return exe.parent_path().string();
  }();
  return dir;
}

// The build tree the test binary is in: the nearest directory above it that
// holds CMakeCache.txt.
inline const std::string& TestBuildDir() {
  static const std::string dir = [] {
    std::error_code ec;
    for (std::filesystem::path p = TestBinaryDir(); p.has_relative_path(); p = p.parent_path())
      if (std::filesystem::exists(p / "CMakeCache.txt", ec)) return p.string();
    std::fprintf(stderr,
                 "test setup: no CMakeCache.txt above %s (run the tests from a build tree)\n",
                 TestBinaryDir().c_str());
    std::abort();
  }();
  return dir;
}

// The `tracesmith` binary under test: $TS_TRACESMITH_BIN when set, else the
// one of this build tree (bin/tracesmith).
inline const char* TracesmithBin() {
  static const std::string bin = [] {
    const char* env = std::getenv("TS_TRACESMITH_BIN");
    return env && *env ? std::string(env) : TestBuildDir() + "/bin/tracesmith";
  }();
  return bin.c_str();
}

// Whether the product code under test runs under AddressSanitizer: the test
// programs' own units are not instrumented in the asan preset, the libraries
// and the CLI they run are, and the runtime is linked into every binary.
inline bool ProductUnderAsan() { return dlsym(RTLD_DEFAULT, "__asan_init") != nullptr; }

}  // namespace tracesmith::testing
