// The capture-cost summary from the capture.cost.* stats a capture writes.
#include "tracesmith/analysis/capture_cost.h"

#include <gtest/gtest.h>

#include <string>

namespace tracesmith::analysis {
namespace {

void AddStat(model::Trace& t, uint32_t pid, const std::string& name, int64_t value) {
  model::Stat s;
  s.name_id = t.strings.Intern(name);
  s.value = value;
  s.pid = pid;
  t.Rows<model::Stat>().push_back(s);
}

TEST(CaptureCost, PerLaunchFiguresAndContributors) {
  model::Trace t;
  for (int i = 0; i < 1000; ++i) {
    model::KernelEvent k;
    k.pid = 7;
    t.Rows<model::KernelEvent>().push_back(k);
  }
  AddStat(t, 7, "capture.cost.launch.calls", 1000);
  AddStat(t, 7, "capture.cost.launch.ns", 600000);  // 0.6 us per launch
  AddStat(t, 7, "capture.cost.sync.calls", 10);
  AddStat(t, 7, "capture.cost.sync.ns", 20000);
  AddStat(t, 7, "capture.cost.stack.calls", 1000);
  AddStat(t, 7, "capture.cost.stack.ns", 500000);
  AddStat(t, 7, "capture.cost.stack.unwind.ns", 300000);
  AddStat(t, 7, "capture.cost.stack.python.ns", 100000);
  AddStat(t, 7, "capture.cost.stack.frames_native_x1000", 36500);
  AddStat(t, 7, "capture.cost.writer.convert_ns", 5000000);
  AddStat(t, 7, "capture.cost.writer.total_ns", 9000000);
  AddStat(t, 7, "capture.cupti_records", 5);  // not a cost stat
  auto costs = ComputeCaptureCost(t);
  ASSERT_EQ(costs.size(), 1u);
  const CaptureCost& c = costs[0];
  EXPECT_EQ(c.pid, 7u);
  EXPECT_EQ(c.kernels, 1000u);
  EXPECT_DOUBLE_EQ(c.program_ns, 620000);  // launch + sync; stack is a part of launch
  EXPECT_NEAR(c.UsPerLaunch(), 0.62, 1e-9);
  ASSERT_EQ(c.sites.size(), 2u);
  EXPECT_EQ(c.sites[0].name, "launch");  // largest first
  ASSERT_EQ(c.stack.size(), 4u);
  EXPECT_EQ(c.stack[3].name, "stack.dedup");
  EXPECT_DOUBLE_EQ(c.stack[3].ns, 100000);  // 500 - 300 - 100 us
  EXPECT_DOUBLE_EQ(c.native_frames, 36.5);
  EXPECT_EQ(CaptureCostLine(c),
            "capture cost: 0.62 us per launch on the program's threads (620.0 us in all), 9.0 ms "
            "CPU in the writer");
  auto details = CaptureCostDetails(c);
  ASSERT_FALSE(details.empty());
  EXPECT_EQ(details[0], "launch: 600.0 us in 1000 calls (600 ns each), 0.600 us per launch");
}

TEST(CaptureCost, TracesWithoutCostStatsHaveNone) {
  model::Trace t;
  AddStat(t, 1, "capture.cupti_records", 5);
  EXPECT_TRUE(ComputeCaptureCost(t).empty());
}

}  // namespace
}  // namespace tracesmith::analysis
