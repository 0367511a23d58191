// The capture-cost summary from the capture.cost.* stats a capture writes.
#include "tracesmith/analysis/capture_cost.h"
#include "tracesmith/model/event_names.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tracesmith::analysis {
namespace {

void AddStat(model::Trace& t, uint32_t pid, const std::string& name, int64_t value) {
  model::Stat s;
  s.name_id = t.strings.Intern(name);
  s.value = value;
  s.pid = pid;
  t.Rows<model::Stat>().push_back(s);
}

// A trace of `kernels` kernel rows of process `pid` and the given stats of it.
model::Trace CostTrace(uint32_t pid, size_t kernels,
                       const std::vector<std::pair<std::string, int64_t>>& stats) {
  model::Trace t;
  model::KernelEvent k;
  k.pid = pid;
  t.Rows<model::KernelEvent>().assign(kernels, k);
  for (const auto& [name, value] : stats) AddStat(t, pid, name, value);
  return t;
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

TEST(CaptureCost, MedianAndTailOfOneCall) {
  model::Trace t = CostTrace(3, 1000,
                             {{"capture.cost.launch.calls", 1000},
                              {"capture.cost.launch.ns", 1500000},
                              {"capture.cost.launch.p50_ns", 420},
                              {"capture.cost.launch.p99_ns", 61000},
                              {"capture.cost.launch.slow_share_x1000", 625},
                              {"capture.cost.stack.calls", 1000},
                              {"capture.cost.stack.ns", 900000},
                              {"capture.cost.stack.p50_ns", 250},
                              {"capture.cost.stack.p99_ns", 900},
                              {"capture.cost.stack.unwind.ns", 600000}});
  auto costs = ComputeCaptureCost(t);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_DOUBLE_EQ(costs[0].sites[0].p50_ns, 420);
  EXPECT_DOUBLE_EQ(costs[0].sites[0].slow_share, 0.625);
  auto details = CaptureCostDetails(costs[0]);
  ASSERT_GE(details.size(), 3u);
  EXPECT_EQ(details[0],
            "launch: 1.5 ms in 1000 calls (1.5 us each), 1.500 us per launch; one call: median 420 "
            "ns, p99 61.0 us, 62.5% of the time in calls over 10 us");
  // No share printed when no call was that slow; parts without a distribution print none.
  EXPECT_EQ(details[1],
            "  stack: 900.0 us in 1000 calls (900 ns each), 0.900 us per launch; one call: median "
            "250 ns, p99 900 ns [0.0 native + 0.0 Python frames per stack]");
  EXPECT_EQ(details[2].find("one call"), std::string::npos);
}

// A launch site of 1000 calls (1.5 ms; median 420 ns, p99 2 us, p99.9 9 us)
// with its slowest call and its calls of 100 us or more.
std::vector<std::pair<std::string, int64_t>> LaunchSiteStats(int64_t max_ns, int64_t over_100us) {
  return {{"capture.cost.launch.calls", 1000},           {"capture.cost.launch.ns", 1500000},
          {"capture.cost.launch.p50_ns", 420},           {"capture.cost.launch.p99_ns", 2000},
          {"capture.cost.launch.p999_ns", 9000},         {"capture.cost.launch.max_ns", max_ns},
          {"capture.cost.launch.over_100us", over_100us}};
}

// Issue #41 item 2: the 99.9th percentile, the slowest call, the calls of
// 100 us and more, and CUPTI's own overhead rows by kind with their maximum.
TEST(CaptureCost, SlowestCallAndCuptiOverheadRows) {
  auto stats = LaunchSiteStats(4500000, 2);
  stats.insert(stats.end(), {{"capture.cost.first_time.calls", 3},
                             {"capture.cost.first_time.ns", 300000},
                             {"capture.cost.first_time.max_ns", 250000},
                             {"capture.cost.first_time.call_max_ns", 280000}});
  model::Trace t = CostTrace(3, 1000, stats);
  auto overhead = [&t](uint32_t pid, uint32_t kind, uint64_t start, uint64_t end) {
    model::OverheadEvent o;
    o.pid = pid;
    o.overhead_kind = kind;
    o.start_ns = start;
    o.end_ns = end;
    t.Rows<model::OverheadEvent>().push_back(o);
  };
  overhead(3, 7 << 16, 1000, 5001000);  // activity buffer request, 5 ms
  overhead(3, 7 << 16, 9000, 10000);    // ... 1 us
  overhead(3, 3 << 16, 0, 20000);       // resource, 20 us
  overhead(4, 7 << 16, 0, 9000000);     // another process: not this one's
  auto costs = ComputeCaptureCost(t);
  ASSERT_EQ(costs.size(), 1u);
  const CaptureCost& c = costs[0];
  EXPECT_DOUBLE_EQ(c.sites[0].max_ns, 4500000);
  EXPECT_EQ(c.sites[0].over_100us, 2u);
  ASSERT_EQ(c.cupti.size(), 2u);
  EXPECT_EQ(c.cupti[0].kind, "activity buffer request");  // the longest row first
  EXPECT_EQ(c.cupti[0].count, 2u);
  EXPECT_DOUBLE_EQ(c.cupti[0].max_ns, 5000000);
  auto details = CaptureCostDetails(c);
  EXPECT_EQ(details[0],
            "launch: 1.5 ms in 1000 calls (1.5 us each), 1.500 us per launch; one call: median 420 "
            "ns, p99 2.0 us, p99.9 9.0 us, max 4.5 ms, 2 calls of 100 us or more");
  bool first_time = false;
  for (const std::string& d : details)
    if (d.rfind("first_time:", 0) == 0) {
      first_time = true;
      EXPECT_NE(d.find("the longest 250.0 us; in one callback at most 280.0 us"), std::string::npos)
          << d;
    }
  EXPECT_TRUE(first_time);
  EXPECT_EQ(details.back(),
            "CUPTI's own work (its overhead rows, inside the program's CUDA calls or the writer's "
            "flushes): activity buffer request 2x, 5.0 ms in all, max 5.0 ms; resource 1x, 20.0 us "
            "in all, max 20.0 us.");
  // The streaming form (info) tallies the same rows.
  OverheadTally tally;
  for (const auto& o : t.Rows<model::OverheadEvent>()) TallyOverhead(o, &tally);
  std::map<uint32_t, uint64_t> kernels{{3, 1000}};
  EXPECT_EQ(CaptureCostDetails(ComputeCaptureCost(t, kernels, tally)[0]).back(), details.back());
}

// TraceSmith's own overhead rows (PC sampling drains, kind
// model::kOverheadPcSamplingDrain) are listed apart from CUPTI's.
TEST(CaptureCost, OwnDrainRowsApartFromCuptis) {
  model::Trace t = CostTrace(3, 1000, LaunchSiteStats(4500000, 2));
  auto overhead = [&t](uint32_t kind, uint64_t start, uint64_t end) {
    model::OverheadEvent o;
    o.pid = 3;
    o.overhead_kind = kind;
    o.start_ns = start;
    o.end_ns = end;
    t.Rows<model::OverheadEvent>().push_back(o);
  };
  overhead(7 << 16, 0, 1000);                                     // CUPTI's: 1 us
  overhead(model::kOverheadPcSamplingDrain, 10000, 2010000);      // 2 ms
  overhead(model::kOverheadPcSamplingDrain, 30000000, 31000000);  // 1 ms
  const CaptureCost c = ComputeCaptureCost(t)[0];
  ASSERT_EQ(c.cupti.size(), 1u);
  ASSERT_EQ(c.own.size(), 1u);
  EXPECT_EQ(c.own[0].kind, "PC sampling drain");
  EXPECT_EQ(c.own[0].count, 2u);
  EXPECT_DOUBLE_EQ(c.own[0].max_ns, 2000000);
  EXPECT_EQ(CaptureCostDetails(c).back(),
            "TraceSmith's calls into CUPTI on its own threads (the program's CUDA calls wait for "
            "CUPTI while one runs): PC sampling drain 2x, 3.0 ms in all, max 2.0 ms.");
}

// TRACESMITH_SLOW_CALL_PROBE=1: the slow calls by what happened to their thread.
TEST(CaptureCost, SlowCallProbeClasses) {
  auto stats = LaunchSiteStats(245000, 5);
  stats.insert(stats.end(), {{"capture.cost.launch.slow_preempted", 3},
                             {"capture.cost.launch.slow_blocked", 0},
                             {"capture.cost.launch.slow_faulted", 0},
                             {"capture.cost.launch.slow_unexplained", 1},
                             {"capture.cost.launch.slow_interrupted", 1}});
  model::Trace t = CostTrace(3, 1000, stats);
  const CaptureCost c = ComputeCaptureCost(t)[0];
  ASSERT_EQ(c.sites[0].slow_classes.size(), 3u);
  EXPECT_EQ(c.sites[0].slow_classes[0], (std::pair<std::string, uint64_t>{"preempted", 3}));
  EXPECT_EQ(CaptureCostDetails(c)[0],
            "launch: 1.5 ms in 1000 calls (1.5 us each), 1.500 us per launch; one call: median 420 "
            "ns, p99 2.0 us, p99.9 9.0 us, max 245.0 us, 5 calls of 100 us or more (slow-call "
            "probe, 5 calls of 100 us or more by exact time: 3 preempted, 1 interrupted, 1 "
            "unexplained)");
}

// 1000 launches with stacks (launch 700 us, stack 500 us of which unwind
// 400 us) plus a diagnostic's stats.
model::Trace StackDiagnosticTrace(const std::vector<std::pair<std::string, int64_t>>& diagnostic) {
  std::vector<std::pair<std::string, int64_t>> stats = {{"capture.cost.launch.calls", 1000},
                                                        {"capture.cost.launch.ns", 700000},
                                                        {"capture.cost.stack.calls", 1000},
                                                        {"capture.cost.stack.ns", 500000},
                                                        {"capture.cost.stack.unwind.ns", 400000}};
  stats.insert(stats.end(), diagnostic.begin(), diagnostic.end());
  return CostTrace(4, 1000, stats);
}

// TRACESMITH_STACK_REWALK=1 runs: the warm second walk is a part of its own,
// after the in-situ parts, and adds nothing to the program's total.
TEST(CaptureCost, RewalkDiagnosticIsShownAfterTheStackParts) {
  model::Trace t = StackDiagnosticTrace(
      {{"capture.cost.stack.rewalk.ns", 90000}, {"capture.cost.stack.rewalk.p50_ns", 85}});
  auto costs = ComputeCaptureCost(t);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_DOUBLE_EQ(costs[0].program_ns, 700000);
  ASSERT_EQ(costs[0].stack.size(), 4u);
  EXPECT_EQ(costs[0].stack[2].name, "stack.dedup");
  EXPECT_EQ(costs[0].stack[3].name, "stack.rewalk");
  EXPECT_DOUBLE_EQ(costs[0].stack[3].ns, 90000);
  EXPECT_DOUBLE_EQ(costs[0].stack[3].p50_ns, 85);
}

// TRACESMITH_STACK_COPYPROBE=1 runs: the copy of the walked span is a part
// of its own with its mean size, and adds nothing to the program's total.
TEST(CaptureCost, CopyProbeIsShownWithItsBytes) {
  model::Trace t = StackDiagnosticTrace({{"capture.cost.stack.copy.ns", 120000},
                                         {"capture.cost.stack.copy.p50_ns", 110},
                                         {"capture.cost.stack.copy.bytes_mean", 3072}});
  auto costs = ComputeCaptureCost(t);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_DOUBLE_EQ(costs[0].program_ns, 700000);
  ASSERT_EQ(costs[0].stack.size(), 4u);
  EXPECT_EQ(costs[0].stack[3].name, "stack.copy");
  EXPECT_DOUBLE_EQ(costs[0].copy_bytes, 3072);
  bool shown = false;
  for (const std::string& line : CaptureCostDetails(costs[0])) {
    bool copy = line.find("stack.copy: 120.0 us in 1000 calls (120 ns each)") != std::string::npos;
    shown = shown || (copy && line.find("[3072 bytes per copy]") != std::string::npos);
  }
  EXPECT_TRUE(shown);
}

TEST(CaptureCost, FirstTimeWorkIsASiteOfItsOwnAndLeftOutOfTheSteadyFigure) {
  model::Trace t = CostTrace(5, 2000,
                             {{"capture.cost.launch.calls", 2000},
                              {"capture.cost.launch.ns", 1000000},
                              {"capture.cost.first_time.calls", 50},
                              {"capture.cost.first_time.ns", 3000000}});
  auto costs = ComputeCaptureCost(t);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_DOUBLE_EQ(costs[0].program_ns, 4000000);
  EXPECT_DOUBLE_EQ(costs[0].first_time_ns, 3000000);
  EXPECT_EQ(CaptureCostLine(costs[0]),
            "capture cost: 2.00 us per launch on the program's threads (4.0 ms in all; 0.50 us "
            "per launch without first-time work), 0 ns CPU in the writer");
  auto details = CaptureCostDetails(costs[0]);
  ASSERT_GE(details.size(), 2u);
  EXPECT_EQ(details[0],
            "first_time: 3.0 ms in 50 calls (60.0 us each), 1.500 us per launch (a thread's stack "
            "bounds, walk memo and rings, unwind rules for new return addresses, new call stacks: "
            "paid once each)");
}

// Where the slowest callback's first-time work went, by kind (issue #41 item 2).
TEST(CaptureCost, FirstTimeWorkByKindAndTheSlowestCallbacksParts) {
  model::Trace t = CostTrace(5, 2000,
                             {{"capture.cost.launch.calls", 2000},
                              {"capture.cost.launch.ns", 1000000},
                              {"capture.cost.first_time.calls", 50},
                              {"capture.cost.first_time.ns", 3000000},
                              {"capture.cost.first_time.max_ns", 300000},
                              {"capture.cost.first_time.call_max_ns", 420000},
                              {"capture.cost.first_time.rule.calls", 40},
                              {"capture.cost.first_time.rule.ns", 200000},
                              {"capture.cost.first_time.rule.max_ns", 20000},
                              {"capture.cost.first_time.rule.in_call_max_ns", 100000},
                              {"capture.cost.first_time.ring.calls", 10},
                              {"capture.cost.first_time.ring.ns", 2800000},
                              {"capture.cost.first_time.ring.max_ns", 300000},
                              {"capture.cost.first_time.ring.in_call_max_ns", 320000}});
  auto costs = ComputeCaptureCost(t);
  ASSERT_EQ(costs.size(), 1u);
  ASSERT_EQ(costs[0].first_time_kinds.size(), 2u);
  EXPECT_EQ(costs[0].first_time_kinds[0].kind, "rule");  // in base/first_time_cost.h's order
  EXPECT_EQ(costs[0].first_time_kinds[1].kind, "ring");
  auto details = CaptureCostDetails(costs[0]);
  ASSERT_GE(details.size(), 3u);
  EXPECT_NE(details[0].find("; the longest 300.0 us; in one callback at most 420.0 us (ring "
                            "320.0 us, rule 100.0 us)"),
            std::string::npos)
      << details[0];
  EXPECT_EQ(details[1], "  first_time.rule: 40 pieces, 200.0 us, the longest 20.0 us");
  EXPECT_EQ(details[2], "  first_time.ring: 10 pieces, 2.8 ms, the longest 300.0 us");
}

TEST(CaptureCost, TracesWithoutCostStatsHaveNone) {
  model::Trace t;
  AddStat(t, 1, "capture.cupti_records", 5);
  EXPECT_TRUE(ComputeCaptureCost(t).empty());
}

// The percentiles come from histogram buckets (a bound above the calls in
// it), the maximum is exact: a percentile is never shown above the maximum.
TEST(CaptureCost, PercentilesNeverAboveTheSlowestCall) {
  model::Trace t = CostTrace(3, 1000, LaunchSiteStats(5000, 0));  // p99.9 9 us, max 5 us
  auto costs = ComputeCaptureCost(t);
  ASSERT_EQ(costs.size(), 1u);
  const auto& launch = costs[0].sites[0];
  EXPECT_DOUBLE_EQ(launch.p50_ns, 420);
  EXPECT_DOUBLE_EQ(launch.p99_ns, 2000);
  EXPECT_DOUBLE_EQ(launch.p999_ns, 5000);
  EXPECT_DOUBLE_EQ(launch.max_ns, 5000);
}

}  // namespace
}  // namespace tracesmith::analysis
