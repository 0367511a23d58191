// Golden tests: small hand-built traces -> report numbers checked against the
// hand calculations in test_traces.cc and the nanosecond-walking oracle, and
// the text report compared with tests/analysis/golden/<name>.txt
// (TS_UPDATE_GOLDEN=1 rewrites the files and fails, nothing compared; review the
// diff before committing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "golden_check.h"
#include "oracle.h"
#include "test_traces.h"
#include "tracesmith/analysis/ascii_timeline.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith::analysis {
namespace {

using namespace testing;

struct Analyzed {
  CompactTrace trace;
  AnalysisReport report;
};

std::unique_ptr<Analyzed> Analyze(const model::Trace& t, const std::string& name) {
  auto a = std::make_unique<Analyzed>();
  a->trace.IngestAll(t);
  a->trace.Finalize();
  a->report = BuildReport(a->trace, name);
  return a;
}

// Every device's busy/kernel/copy/overlap/concurrency figures and every
// stream's state at every nanosecond, against the oracle.
void CheckAgainstOracle(const model::Trace& t, const Analyzed& a) {
  std::vector<OracleOp> ops = OracleOps(t);
  const uint64_t w0 = a.report.window_begin, w1 = a.report.window_end;
  for (const DeviceTimeline& d : a.report.timeline.devices) {
    OracleDevice o = WalkDevice(ops, d.device, w0, w1);
    EXPECT_EQ(d.busy_ns, o.busy) << "device " << d.device;
    EXPECT_EQ(d.kernel_ns, o.kernel);
    EXPECT_EQ(d.copy_ns, o.copy);
    EXPECT_EQ(d.kernel_copy_overlap_ns, o.overlap);
    EXPECT_EQ(d.stream_busy_sum_ns, o.stream_sum);
    EXPECT_EQ(d.max_concurrency, o.max_conc);
    EXPECT_EQ(d.idle.total_ns(), (w1 - w0) - o.busy);
  }
  for (uint32_t lane : a.trace.gpu_lanes()) {
    const Lane& l = a.trace.lanes()[lane];
    StreamStateMachine sm(a.trace, lane);
    std::array<uint64_t, kNumStreamStates> want{};
    for (uint64_t t2 = w0; t2 < w1; ++t2) {
      int s = StateAt(t, ops, l.device, l.stream, t2);
      ASSERT_EQ(int(sm.StateAt(t2)), s) << "stream " << l.stream << " at " << t2;
      want[s]++;
    }
    EXPECT_EQ(sm.time_in_state(), want) << "stream " << l.stream;
  }
  // Kernel statistics from the raw rows: counts, totals, nearest-rank percentiles.
  std::map<std::string, std::vector<uint64_t>> durations;
  for (const auto& k : t.Rows<model::KernelEvent>())
    durations[std::string(t.strings.Get(k.demangled_id))].push_back(k.end_ns - k.start_ns);
  ASSERT_EQ(a.report.kernels.size(), durations.size());
  for (const NamedStats& n : a.report.kernels) {
    std::vector<uint64_t> v = durations[n.name];
    std::sort(v.begin(), v.end());
    uint64_t total = 0;
    for (uint64_t x : v) total += x;
    EXPECT_EQ(n.stats.count, v.size()) << n.name;
    EXPECT_EQ(n.stats.total_ns, total) << n.name;
    EXPECT_EQ(n.stats.max_ns, v.back()) << n.name;
    EXPECT_EQ(n.stats.p50_ns, v[(v.size() * 50 + 99) / 100 - 1]) << n.name;
    EXPECT_EQ(n.stats.p95_ns, v[(v.size() * 95 + 99) / 100 - 1]) << n.name;
  }
  // The critical path tiles the window exactly.
  uint64_t path = 0;
  for (uint64_t ns : a.report.critical_path_ns) path += ns;
  EXPECT_EQ(path, w1 - w0);
}

const DeviceTimeline& Device(const AnalysisReport& r, uint32_t id) {
  for (const DeviceTimeline& d : r.timeline.devices)
    if (d.device == id) return d;
  ADD_FAILURE() << "no device " << id;
  return r.timeline.devices.at(0);
}

uint64_t Idle(const IdleBreakdown& b, IdleCause c) { return b.ns[int(c)]; }
uint64_t Path(const AnalysisReport& r, PathCategory c) { return r.critical_path_ns[int(c)]; }

TEST(GoldenTest, OverlappingStreams) {
  model::Trace t = OverlappingStreamsTrace();
  auto a = Analyze(t, "overlapping_streams");
  const AnalysisReport& r = a->report;
  CheckAgainstOracle(t, *a);
  EXPECT_EQ(r.wall_ns(), 250u);
  const DeviceTimeline& d = Device(r, 0);
  EXPECT_EQ(d.busy_ns, 210u);
  EXPECT_EQ(d.max_concurrency, 2u);
  EXPECT_DOUBLE_EQ(d.avg_concurrency, 290.0 / 210.0);
  EXPECT_EQ(d.kernel_copy_overlap_ns, 30u);
  EXPECT_EQ(Idle(d.idle, IdleCause::kHostLaunch), 20u);
  EXPECT_EQ(Idle(d.idle, IdleCause::kLaunchLatency), 10u);
  EXPECT_EQ(Idle(d.idle, IdleCause::kNothingQueued), 10u);
  ASSERT_EQ(r.timeline.streams.size(), 2u);
  const StreamTimeline& s1 = r.timeline.streams[0];
  const StreamTimeline& s2 = r.timeline.streams[1];
  EXPECT_EQ(s1.busy_ns, 170u);
  EXPECT_EQ(Idle(s1.idle, IdleCause::kHostLaunch), 20u);
  EXPECT_EQ(Idle(s1.idle, IdleCause::kLaunchLatency), 10u);
  EXPECT_EQ(Idle(s1.idle, IdleCause::kNothingQueued), 50u);
  EXPECT_EQ(s2.busy_ns, 120u);
  EXPECT_EQ(Idle(s2.idle, IdleCause::kHostLaunch), 120u);
  EXPECT_EQ(Idle(s2.idle, IdleCause::kNothingQueued), 10u);
  EXPECT_EQ(s1.state_ns[int(StreamState::kDispatchPending)], 30u);
  EXPECT_EQ(s1.state_ns[int(StreamState::kFinished)], 50u);
  EXPECT_EQ(s2.state_ns[int(StreamState::kIdle)], 72u);
  EXPECT_EQ(s2.state_ns[int(StreamState::kDispatchPending)], 58u);
  // Kernels: gemm 100+70, relu 50.
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].name, "gemm");
  EXPECT_EQ(r.kernels[0].stats.p50_ns, 70u);
  EXPECT_EQ(r.kernels[0].stats.p95_ns, 100u);
  EXPECT_EQ(r.kernels[0].stats.mean_ns, 85u);
  EXPECT_NEAR(r.kernels[0].share, 100.0 * 170 / 220, 1e-9);
  // Copies: HtoD 1000 B in 60 ns, memset 64 B in 10 ns.
  ASSERT_EQ(r.copies.size(), 2u);
  EXPECT_EQ(r.copies[0].direction, "HtoD");
  EXPECT_EQ(r.copies[0].bytes, 1000u);
  EXPECT_EQ(r.copies[0].busy_ns, 60u);
  EXPECT_EQ(r.copies[1].direction, "memset");
  // Launches: API 10, 8, 8 ns; delays 20, 38, 108.
  ASSERT_EQ(r.launches.size(), 2u);
  EXPECT_EQ(r.launches[0].api, "cudaLaunchKernel");
  EXPECT_EQ(r.launches[0].api_duration.p50_ns, 8u);
  EXPECT_EQ(r.launches[0].api_duration.max_ns, 10u);
  EXPECT_EQ(r.launches[0].launch_delay.p50_ns, 38u);
  EXPECT_EQ(r.launches[0].launch_delay.p95_ns, 108u);
  EXPECT_EQ(r.launches[0].outliers, 0u);
  // Critical path: memset <- memcpy <- A4 <- A3 <- A2 <- A1 (see test_traces.cc).
  EXPECT_EQ(r.critical_path_nodes, 6u);
  EXPECT_EQ(Path(r, PathCategory::kMemset), 10u);
  EXPECT_EQ(Path(r, PathCategory::kStreamGap), 10u);
  EXPECT_EQ(Path(r, PathCategory::kMemcpy), 60u);
  EXPECT_EQ(Path(r, PathCategory::kLaunchDelay), 10u);
  EXPECT_EQ(Path(r, PathCategory::kHostApi), 36u);
  EXPECT_EQ(Path(r, PathCategory::kHostGap), 124u);
  EXPECT_GE(r.findings.size(), 3u);
  EXPECT_LE(r.findings.size(), 10u);
  CheckGolden(r, "overlapping_streams");
}

TEST(GoldenTest, EventWait) {
  model::Trace t = EventWaitTrace();
  auto a = Analyze(t, "event_wait");
  const AnalysisReport& r = a->report;
  CheckAgainstOracle(t, *a);
  ASSERT_EQ(r.timeline.streams.size(), 2u);
  const StreamTimeline& s2 = r.timeline.streams[1];
  EXPECT_EQ(s2.state_ns[int(StreamState::kIdle)], 30u);
  EXPECT_EQ(s2.state_ns[int(StreamState::kWaiting)], 270u);
  EXPECT_EQ(s2.state_ns[int(StreamState::kDispatchPending)], 10u);
  EXPECT_EQ(s2.state_ns[int(StreamState::kRunning)], 90u);
  EXPECT_EQ(Idle(s2.idle, IdleCause::kOtherStream), 310u);
  const DeviceTimeline& d = Device(r, 0);
  EXPECT_EQ(Idle(d.idle, IdleCause::kHostLaunch), 20u);
  EXPECT_EQ(Idle(d.idle, IdleCause::kLaunchLatency), 10u);
  EXPECT_EQ(r.critical_path_nodes, 4u);
  EXPECT_EQ(Path(r, PathCategory::kKernel), 370u);
  EXPECT_EQ(Path(r, PathCategory::kWaitGap), 10u);
  EXPECT_EQ(Path(r, PathCategory::kLaunchDelay), 10u);
  EXPECT_EQ(Path(r, PathCategory::kHostApi), 10u);
  // The path goes producer -> (event record) wait -> consumer.
  CriticalPath cp = ComputeCriticalPath(a->trace, 100);
  std::vector<NodeKind> kinds;
  for (const PathSegment& s : cp.segments) kinds.push_back(s.node.kind);
  ASSERT_EQ(cp.segments.size(), 5u);
  EXPECT_EQ(cp.segments[0].category, PathCategory::kHostApi);
  EXPECT_EQ(cp.segments[2].category, PathCategory::kKernel);
  EXPECT_EQ(cp.segments[3].category, PathCategory::kWaitGap);
  CheckGolden(r, "event_wait");
}

// Two threads launch onto one stream and the second op's call starts before the first's:
// the stream is dispatch-pending from the earlier call on (the state machine's pending union
// when calls are not in op order).
TEST(GoldenTest, CallsOutOfOpOrderOnOneStream) {
  TraceBuilder b;
  b.Kernel("first", 0, 7, 100, 150, 50, 60, 0, 0, /*tid=*/1);
  b.Kernel("second", 0, 7, 200, 240, 20, 30, 0, 0, /*tid=*/2);
  b.Kernel("third", 0, 7, 300, 320, 250, 260, 0, 0, /*tid=*/1);
  model::Trace t = b.trace();
  auto a = Analyze(t, "calls_out_of_order");
  CheckAgainstOracle(t, *a);
  ASSERT_EQ(a->report.timeline.streams.size(), 1u);
  const StreamTimeline& s = a->report.timeline.streams[0];
  // Window [20, 320]: pending 20-100, 150-200, 250-300; running 50 + 40 + 20 ns.
  EXPECT_EQ(s.state_ns[int(StreamState::kDispatchPending)], 80u + 50u + 50u);
  EXPECT_EQ(s.state_ns[int(StreamState::kRunning)], 110u);
  EXPECT_EQ(s.state_ns[int(StreamState::kIdle)], 10u);
}

TEST(GoldenTest, GraphLaunch) {
  model::Trace t = GraphLaunchTrace();
  auto a = Analyze(t, "graph_launch");
  const AnalysisReport& r = a->report;
  CheckAgainstOracle(t, *a);
  EXPECT_EQ(r.graph_launches, 2u);
  ASSERT_EQ(r.graphs.size(), 1u);
  EXPECT_EQ(r.graphs[0].graph_id, 7u);
  EXPECT_EQ(r.graphs[0].launches, 2u);
  EXPECT_EQ(r.graphs[0].kernels, 4u);
  EXPECT_EQ(r.graphs[0].kernel_ns, 255u);
  ASSERT_EQ(r.launches.size(), 1u);
  EXPECT_EQ(r.launches[0].api, "cudaGraphLaunch");
  EXPECT_EQ(r.launches[0].launch_delay.p50_ns, 20u);
  EXPECT_EQ(r.launches[0].launch_delay.max_ns, 110u);
  // Graph kernels depend on their launch through a graph_launch edge.
  DependencyRules rules(a->trace);
  std::vector<Edge> edges;
  rules.Predecessors({NodeKind::kOp, 0}, &edges);
  bool graph_edge = false;
  for (const Edge& e : edges) graph_edge |= e.kind == EdgeKind::kGraphLaunch;
  EXPECT_TRUE(graph_edge);
  CheckGolden(r, "graph_launch");
}

TEST(GoldenTest, Empty) {
  model::Trace t = EmptyTrace();
  auto a = Analyze(t, "empty");
  EXPECT_EQ(a->report.wall_ns(), 0u);
  EXPECT_TRUE(a->report.timeline.devices.empty());
  EXPECT_TRUE(a->report.kernels.empty());
  ASSERT_EQ(a->report.findings.size(), 1u);
  EXPECT_EQ(RenderAsciiTimeline(a->trace, {}), "(no events in the window)\n");
  CheckGolden(a->report, "empty");
}

TEST(GoldenTest, SingleEvent) {
  model::Trace t = SingleEventTrace();
  auto a = Analyze(t, "single_event");
  CheckAgainstOracle(t, *a);
  const AnalysisReport& r = a->report;
  EXPECT_EQ(r.wall_ns(), 500u);
  EXPECT_EQ(Device(r, 0).busy_ns, 500u);
  EXPECT_EQ(Device(r, 0).idle.total_ns(), 0u);
  EXPECT_EQ(Path(r, PathCategory::kKernel), 500u);
  CheckGolden(r, "single_event");
}

TEST(GoldenTest, TwoProcessesWithClockAnchors) {
  model::Trace t = TwoProcessTrace();
  auto a = Analyze(t, "two_processes");
  const AnalysisReport& r = a->report;
  EXPECT_TRUE(r.compact.clocks_aligned);
  EXPECT_EQ(r.window_begin, 1'000'050u);
  EXPECT_EQ(r.window_end, 1'001'251u);
  const auto& ops = a->trace.ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].start_ns, 1'000'100u);
  EXPECT_EQ(ops[0].end_ns, 1'000'200u);
  EXPECT_EQ(ops[1].start_ns, 1'001'151u);
  EXPECT_EQ(ops[1].end_ns, 1'001'251u);
  EXPECT_EQ(Device(r, 0).busy_ns, 100u);
  EXPECT_EQ(Device(r, 1).busy_ns, 100u);
  EXPECT_EQ(Idle(Device(r, 0).idle, IdleCause::kHostLaunch), 50u);
  EXPECT_EQ(Idle(Device(r, 0).idle, IdleCause::kNothingQueued), 1051u);
  EXPECT_EQ(Idle(Device(r, 1).idle, IdleCause::kHostLaunch), 1101u);
  CheckGolden(r, "two_processes");
}

TEST(GoldenTest, CallSitesAndNvtx) {
  model::Trace t = CallSiteTrace();
  auto a = Analyze(t, "call_sites");
  CheckAgainstOracle(t, *a);
  const AnalysisReport& r = a->report;
  ASSERT_EQ(r.call_sites.size(), 2u);
  EXPECT_EQ(r.call_sites[0].name, "step (train.py:88)");
  EXPECT_EQ(r.call_sites[0].stats.count, 3u);
  EXPECT_EQ(r.call_sites[0].stats.total_ns, 60u);
  EXPECT_EQ(r.call_sites[1].name, "eval (train.py:120)");
  EXPECT_EQ(r.call_sites[1].stats.total_ns, 40u);
  ASSERT_EQ(r.nvtx.size(), 2u);
  EXPECT_EQ(r.nvtx[0].name, "eval");
  EXPECT_EQ(r.nvtx[0].kernels, 1u);
  EXPECT_EQ(r.nvtx[0].kernel_ns, 40u);
  EXPECT_EQ(r.nvtx[1].name, "forward");
  EXPECT_EQ(r.nvtx[1].kernels, 2u);
  EXPECT_EQ(r.nvtx[1].kernel_ns, 30u);
  CheckGolden(r, "call_sites");

  // --nvtx forward keeps the first two launches only.
  CompactTrace only;
  only.IngestAll(t);
  only.Finalize();
  ASSERT_TRUE(only.RestrictToNvtx("forward").ok());
  AnalysisReport fr = BuildReport(only, "call_sites --nvtx forward");
  EXPECT_EQ(fr.kernel_count, 2u);
  EXPECT_EQ(fr.kernel_ns, 30u);
  EXPECT_FALSE(only.RestrictToNvtx("nope").ok());
}

// A kernel counts toward every NVTX range open on its call's thread when the call starts,
// each name once. Ranges open and close between calls: "empty" opens and closes between
// two calls while "outer" and "inner" stay open, and must not reach the next call; a
// second "outer" nested in the first counts its kernel once.
TEST(GoldenTest, NvtxRangesOpeningAndClosingBetweenCalls) {
  TraceBuilder b;
  b.Kernel("k", 0, 1, 10, 20, 5, 8);        // outer
  b.Kernel("k", 0, 1, 40, 60, 30, 32);      // outer, inner
  b.Kernel("k", 0, 1, 70, 100, 60, 62);     // outer (twice), inner
  b.Kernel("k", 0, 1, 160, 200, 150, 152);  // none
  b.Kernel("k", 0, 1, 260, 310, 250, 252);  // late
  b.Nvtx("outer", 0, 100);
  b.Nvtx("inner", 25, 65);
  b.Nvtx("empty", 40, 45);
  b.Nvtx("outer", 50, 70);
  b.Nvtx("late", 200, 300);
  auto a = Analyze(b.trace(), "nvtx_between_calls");
  std::map<std::string, std::pair<uint64_t, uint64_t>> got;  // name -> kernels, ns
  for (const NvtxStats& n : a->report.nvtx) got[n.name] = {n.kernels, n.kernel_ns};
  const std::map<std::string, std::pair<uint64_t, uint64_t>> want = {
      {"outer", {3, 60}}, {"inner", {2, 50}}, {"empty", {0, 0}}, {"late", {1, 50}}};
  EXPECT_EQ(got, want);
}

TEST(GoldenTest, WindowRestriction) {
  model::Trace t = OverlappingStreamsTrace();
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  ASSERT_TRUE(ApplyRestrictions({.from = "100ns", .to = "180ns"}, &c).ok());
  AnalysisReport r = BuildReport(c, "window");
  // [100,180): s1 gemm [100,120) + [130,180); s2 memcpy [170,180).
  EXPECT_EQ(r.wall_ns(), 80u);
  EXPECT_EQ(Device(r, 0).busy_ns, 70u);
  EXPECT_EQ(Device(r, 0).kernel_copy_overlap_ns, 10u);
  EXPECT_EQ(r.kernel_count, 2u);  // ops overlapping the window count whole
  CompactTrace bad;
  bad.IngestAll(t);
  bad.Finalize();
  EXPECT_FALSE(ApplyRestrictions({.from = "2ms", .to = "1ms"}, &bad).ok());
}

TEST(GoldenTest, AsciiTimeline) {
  model::Trace t = OverlappingStreamsTrace();
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  // 14-character labels + " |" + 25 buckets of 10 ns over [0, 250).
  std::string s = RenderAsciiTimeline(c, {.width = 42});
  EXPECT_NE(s.find("GPU 0 stream 1 |..KKKKKKKKKK.KKKKKKK.....\n"), std::string::npos) << s;
  EXPECT_NE(s.find("GPU 0 stream 2 |.....KKKKK.......MMMMMM.M\n"), std::string::npos) << s;
  std::istringstream lines(s);
  for (std::string line; std::getline(lines, line);)
    if (line.find('|') != std::string::npos) {
      EXPECT_LE(line.size(), 42u) << line;
    }
}

}  // namespace
}  // namespace tracesmith::analysis
