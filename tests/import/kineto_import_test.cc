// The Kineto (torch.profiler) JSON importer on JSON that is not such a trace.
#include <gtest/gtest.h>

#include "tracesmith/import/import.h"

namespace tracesmith::importer {
namespace {

TEST(KinetoImport, JsonWithoutTraceEventsIsNotATrace) {
  for (const char* text : {"{}", R"({"name": "config", "steps": [1, 2]})", "[1, 2, 3]"}) {
    auto t = ImportKinetoJson(text);
    ASSERT_FALSE(t.ok()) << text << " imported as a trace";
    EXPECT_NE(t.status().message().find("not a torch.profiler trace"), std::string::npos)
        << t.status().ToString();
  }
}

TEST(KinetoImport, AnEmptyTraceIsStillATrace) {
  auto t = ImportKinetoJson(R"({"schemaVersion": 1, "traceEvents": []})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->EventCount(), 0u);
}

}  // namespace
}  // namespace tracesmith::importer
