// The "dot" export format through the export library (ExportSbtFile), as the
// CLI and the Python package call it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "testing/temp_file.h"
#include "tracesmith/export/export.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::exporter {
namespace {

std::string ShippedTrace(const char* name) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  return std::string(src ? src : ".") + "/examples/traces/" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(DotExport, IsAnExportFormatLikeTheOthers) {
  auto format = ParseExportFormat("dot");
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, ExportFormat::kDot);
  EXPECT_STREQ(ExportFormatName(*format), "dot");
  EXPECT_STREQ(ExportFormatExtension(*format, false), ".dot");
  testing::TempPath out(".dot");
  ExportOptions options;
  options.dot_node_limit = 25;
  auto stats =
      ExportSbtFile(ShippedTrace("mlp_train.sbt"), ExportFormat::kDot, out.path(), options);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  std::string dot = Slurp(out.path());
  EXPECT_EQ(dot.rfind("digraph tracesmith {", 0), 0u);
  EXPECT_NE(dot.find("// 25 of "), std::string::npos) << dot.substr(0, 200);
  EXPECT_EQ(stats->bytes, dot.size());
}

TEST(DotExport, NeedsAFileNotAnInMemoryTrace) {
  testing::TempPath out(".dot");
  auto stats = ExportTrace(model::Trace(), ExportFormat::kDot, out.path());
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("SBT file"), std::string::npos);
}

TEST(DotExport, ABadWindowIsAnErrorAndWritesNothing) {
  testing::TempPath out(".dot");
  ExportOptions options;
  options.from = "soon";
  auto stats =
      ExportSbtFile(ShippedTrace("mlp_train.sbt"), ExportFormat::kDot, out.path(), options);
  ASSERT_FALSE(stats.ok());
  std::ifstream probe(out.path());
  EXPECT_FALSE(probe.good());
}

}  // namespace
}  // namespace tracesmith::exporter
