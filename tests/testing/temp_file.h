// A temporary file path removed at scope exit.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>

namespace tracesmith::testing {

class TempPath {
 public:
  explicit TempPath(const std::string& suffix = ".sbt") {
    static std::atomic<int> counter{0};
    path_ =
        (std::filesystem::temp_directory_path() / ("tracesmith_test_" + std::to_string(::getpid()) +
                                                   "_" + std::to_string(counter++) + suffix))
            .string();
  }
  ~TempPath() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tracesmith::testing
