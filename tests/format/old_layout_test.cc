// Files written before a field existed keep reading: the codec leaves the
// columns an older writer did not write at zero (table_codec.h).
#include <gtest/gtest.h>

#include <cstdlib>

#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::format {
namespace {

// examples/traces/mlp_train.sbt was captured (2026-11) before
// ClockAnchor.read_window_ns existed: three clock columns, not four.
TEST(OldLayout, ClockAnchorsWithoutReadWindowReadAsZero) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (TS_SOURCE_DIR)";
  auto trace = ReadTraceFile(std::string(src) + "/examples/traces/mlp_train.sbt");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const auto& anchors = trace->Rows<model::ClockAnchor>();
  ASSERT_GE(anchors.size(), 2u);
  for (const model::ClockAnchor& a : anchors) {
    EXPECT_NE(a.gpu_ns, 0u);
    EXPECT_NE(a.realtime_ns, 0u);
    EXPECT_NE(a.monotonic_ns, 0u);
    EXPECT_NE(a.pid, 0u);
    EXPECT_EQ(a.read_window_ns, 0u);  // the column is absent: "unknown"
  }
}

}  // namespace
}  // namespace tracesmith::format
