// Golden test on the real trace shipped in examples/traces/: 5 PyTorch MLP
// training steps (+ 5 warm-up) captured by `tracesmith profile` on an H200
// (scripts/gpu-check.sh, 2026-11-21). Guards the reader against format drift
// and documents what a capture contains.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "capture/trace_checks.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::capture {
namespace {

TEST(ExampleTrace, MlpTrainHasEveryCapturedKind) {
  format::ReadReport report;
  auto t = format::ReadTraceFile(std::string(TS_EXAMPLES_DIR) + "/traces/mlp_train.sbt", &report);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(report.indexed);
  EXPECT_TRUE(report.clean()) << report.Describe();
  EXPECT_EQ(t->Rows<model::KernelEvent>().size(), 1145u);
  EXPECT_EQ(t->Rows<model::MemcpyEvent>().size(), 42u);
  EXPECT_EQ(t->Rows<model::MemsetEvent>().size(), 80u);
  EXPECT_EQ(t->Rows<model::SyncEvent>().size(), 38u);
  EXPECT_EQ(t->Rows<model::ApiEvent>().size(), 1351u);
  EXPECT_EQ(t->Rows<model::MemoryEvent>().size(), 911u);
  EXPECT_EQ(t->Rows<model::ModuleLoadEvent>().size(), 23u);
  ASSERT_EQ(t->Rows<model::Device>().size(), 1u);
  EXPECT_EQ(testing::Str(*t, t->Rows<model::Device>()[0].name_id), "NVIDIA H200");
  EXPECT_EQ(t->Rows<model::Device>()[0].cc_major, 9u);
  EXPECT_EQ(t->Rows<model::Process>().size(), 1u);
  EXPECT_EQ(t->Rows<model::ClockAnchor>().size(), 2u);
  // Every kernel launched through the runtime API has its launch API row
  // (same correlation id). The 70 cutlass GEMMs that cuBLASLt launches with
  // the driver API (cuLaunchKernelEx) have none: the driver API is not in the
  // default --kinds (use --kinds all).
  std::set<uint32_t> api;
  for (const auto& a : t->Rows<model::ApiEvent>()) api.insert(a.correlation_id);
  int without_api = 0;
  for (const auto& k : t->Rows<model::KernelEvent>()) {
    ASSERT_LT(k.start_ns, k.end_ns);
    if (api.count(k.correlation_id)) continue;
    ++without_api;
    EXPECT_NE(testing::Str(*t, k.name_id).find("cutlass"), std::string_view::npos);
  }
  EXPECT_EQ(without_api, 70);
  uint64_t dropped = 0;
  for (const auto& d : t->Rows<model::DropEvent>()) dropped += d.count;
  EXPECT_EQ(dropped, 0u);
}

}  // namespace
}  // namespace tracesmith::capture
