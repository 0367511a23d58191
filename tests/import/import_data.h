// Shared by the import tests: fixture files under tests/import/data/.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tracesmith/base/file_util.h"

namespace tracesmith::importer {

inline std::string DataPath(const std::string& name) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/import/data/" + name;
}

inline std::string ReadData(const std::string& name) {
  auto s = ReadFileToString(DataPath(name));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : std::string();
}

}  // namespace tracesmith::importer
