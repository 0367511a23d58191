// Golden tests of the schedule emulation. Each hand-built trace's expected
// totals are worked out in its comment from the trace alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "analysis/test_traces.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/model/synthetic.h"
#include "tracesmith/replay/emulator.h"

namespace tracesmith::replay {
namespace {

using analysis::testing::TraceBuilder;

analysis::CompactTrace Compact(const model::Trace& t) {
  analysis::CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  return c;
}

EmulationResult Emulate(const model::Trace& t, const EmulationOptions& o = {}) {
  analysis::CompactTrace c = Compact(t);
  auto r = EmulateSchedule(c, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : EmulationResult{};
}

// One thread, one stream:
//   A1 [0,10]   -> k1 s1 [20,120)   (launch latency 20)
//   A2 [12,20]  -> k2 s1 [120,220)  (queued behind k1)
//   cudaStreamSynchronize [25,225], its sync record [25,225]
// Recorded total 225. Halving k1 saves 50 ns and everything after it moves
// up: k2 [70,170), the sync returns 5 ns after k2 ends: total 175.
model::Trace QueuedTrace() {
  TraceBuilder b;
  b.Kernel("k1_gemm", 0, 1, 20, 120, 0, 10);
  b.Kernel("k2_relu", 0, 1, 120, 220, 12, 20);
  b.Sync(model::kSyncStreamSynchronize, 0, 1, 25, 225);
  return std::move(b.trace());
}

TEST(EmulatorTest, ReproducesRecordedScheduleWithoutWhatIf) {
  EmulationResult r = Emulate(QueuedTrace());
  EXPECT_EQ(r.recorded_ns, 225u);
  EXPECT_EQ(r.predicted_ns, 225u);
  ASSERT_EQ(r.op_start.size(), 2u);
  EXPECT_EQ(r.op_start[1], 120);
  EXPECT_EQ(r.op_end[1], 220);
}

TEST(EmulatorTest, ScaleKernelShiftsDependents) {
  EmulationOptions o;
  o.scale_kernels.push_back({"gemm", 0.5});
  EmulationResult r = Emulate(QueuedTrace(), o);
  EXPECT_EQ(r.kernels_scaled, 1u);
  EXPECT_EQ(r.predicted_ns, 175u);
  EXPECT_EQ(r.op_start[1], 70);
  EXPECT_EQ(r.op_end[1], 170);
  EXPECT_NEAR(r.ErrorPercent(), 100.0 * (175.0 - 225.0) / 225.0, 1e-9);
}

TEST(EmulatorTest, ScaleKernelFirstMatchingPatternWins) {
  EmulationOptions o;
  o.scale_kernels.push_back({"k1", 2.0});
  o.scale_kernels.push_back({"gemm", 0.5});  // also matches k1_gemm, but second
  EmulationResult r = Emulate(QueuedTrace(), o);
  EXPECT_EQ(r.predicted_ns, 325u);  // k1 200 ns: k2 [220,320), sync returns at 325
}

// A1 [0,10] -> k1 s1 [20,220); cudaStreamSynchronize [12,225] (record
// [12,225]); A2 [230,240] -> k2 s1 [250,350). Recorded total 350.
// --remove-sync: the sync returns at once, A2 runs 5 ns later ([17,27]) and
// k2 queues behind k1: [220,320). Total 320.
TEST(EmulatorTest, RemoveSyncLetsHostRunAhead) {
  TraceBuilder b;
  b.Kernel("k1", 0, 1, 20, 220, 0, 10);
  b.Sync(model::kSyncStreamSynchronize, 0, 1, 12, 225);
  b.Kernel("k2", 0, 1, 250, 350, 230, 240);
  EXPECT_EQ(Emulate(b.trace()).predicted_ns, 350u);
  EmulationOptions o;
  o.remove_sync = true;
  EmulationResult r = Emulate(b.trace(), o);
  EXPECT_EQ(r.syncs_removed, 1u);
  EXPECT_EQ(r.predicted_ns, 320u);
  EXPECT_EQ(r.op_start[1], 220);
}

// A1 [0,10] -> k1 s1 [20,120); A2 [12,20] -> k2 s2 [30,80). Recorded 120.
// --streams 1 serializes k2 after k1: [120,170), total 170. --streams 2
// changes nothing.
TEST(EmulatorTest, StreamsRoundRobinSerializes) {
  TraceBuilder b;
  b.Kernel("k1", 0, 1, 20, 120, 0, 10);
  b.Kernel("k2", 0, 2, 30, 80, 12, 20);
  EmulationOptions o;
  o.streams = 1;
  EmulationResult r = Emulate(b.trace(), o);
  EXPECT_EQ(r.predicted_ns, 170u);
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.streams[0].ops, 2u);
  EXPECT_EQ(r.streams[0].busy_ns, 150u);
  o.streams = 2;
  EXPECT_EQ(Emulate(b.trace(), o).predicted_ns, 120u);
  // One stream and k1 halved: k1 [20,70), k2 right after it [70,120). k2's
  // new predecessor was recorded to end after k2 started: the schedule must
  // use k1's predicted end, not its recorded one.
  o.streams = 1;
  o.scale_kernels.push_back({"k1", 0.5});
  r = Emulate(b.trace(), o);
  EXPECT_EQ(r.op_start[1], 70);
  EXPECT_EQ(r.predicted_ns, 120u);
  EXPECT_EQ(r.out_of_order_refs, 0u);
}

// Stream 2 waits for the producer on stream 1 (cudaStreamWaitEvent):
//   A1 [0,10] -> producer s1 [20,300); wait call [30,31], record s2 [30,300)
//   A2 [40,50] -> consumer s2 [310,400)
// Halving the producer ends it at 160; the wait is released then and the
// consumer keeps its 10 ns after the wait: [170,260). Total 260.
TEST(EmulatorTest, EventWaitFollowsProducer) {
  TraceBuilder b;
  b.Kernel("producer", 0, 1, 20, 300, 0, 10);
  b.Sync(model::kSyncStreamWaitEvent, 0, 2, 30, 300, 9);
  b.Kernel("consumer", 0, 2, 310, 400, 40, 50);
  EXPECT_EQ(Emulate(b.trace()).predicted_ns, 400u);
  EmulationOptions o;
  o.scale_kernels.push_back({"^producer$", 0.5});
  EmulationResult r = Emulate(b.trace(), o);
  EXPECT_EQ(r.predicted_ns, 260u);
  EXPECT_EQ(r.op_start[1], 170);
}

TEST(EmulatorTest, ParseKernelScale) {
  auto ok = ParseKernelScale("sm90_.*gemm=0.25");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->pattern, "sm90_.*gemm");
  EXPECT_DOUBLE_EQ(ok->factor, 0.25);
  EXPECT_EQ(ParseKernelScale("a=b=2").value().pattern, "a=b");
  EXPECT_FALSE(ParseKernelScale("gemm").ok());
  EXPECT_FALSE(ParseKernelScale("gemm=0").ok());
  EXPECT_FALSE(ParseKernelScale("gemm=-1").ok());
  EXPECT_FALSE(ParseKernelScale("gemm=x").ok());
  EXPECT_FALSE(ParseKernelScale("([=2").ok());
}

TEST(EmulatorTest, SyntheticTraceIdentityAndWhatIfDirection) {
  model::SyntheticOptions so;
  so.kernels = 20000;
  model::Trace t = model::MakeSyntheticTrace(so);
  EmulationResult base = Emulate(t);
  ASSERT_GT(base.recorded_ns, 0u);
  EXPECT_LT(std::abs(base.ErrorPercent()), 1.0) << FormatEmulation(Compact(t), {}, base);
  EmulationOptions faster;
  faster.scale_kernels.push_back({".", 0.5});
  EmulationOptions slower;
  slower.scale_kernels.push_back({".", 2.0});
  uint64_t f = Emulate(t, faster).predicted_ns, s = Emulate(t, slower).predicted_ns;
  EXPECT_LT(f, base.predicted_ns);
  EXPECT_GT(s, base.predicted_ns);
  // One stream per device: the prediction is at least each device's total
  // kernel+copy time, now serialized.
  EmulationOptions one;
  one.streams = 1;
  EmulationResult serial = Emulate(t, one);
  ASSERT_EQ(serial.streams.size(), 2u);
  for (const EmulatedStream& st : serial.streams) EXPECT_GE(serial.predicted_ns, st.busy_ns);
  EXPECT_GT(serial.predicted_ns, base.predicted_ns);
}

// The real capture in examples/traces (a PyTorch MLP training run on an
// H100/H200): with no what-if the prediction must match within 3%.
TEST(EmulatorTest, RealTraceMatchesRecordedTotal) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  std::string path = std::string(src ? src : ".") + "/examples/traces/mlp_train.sbt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  analysis::CompactTrace c;
  ASSERT_TRUE(analysis::LoadCompactTrace(path, {}, &c).ok());
  auto r = EmulateSchedule(c, {});
  ASSERT_TRUE(r.ok());
  std::printf("mlp_train.sbt: recorded %llu ns, predicted %llu ns, error %+.3f%%\n",
              static_cast<unsigned long long>(r->recorded_ns),
              static_cast<unsigned long long>(r->predicted_ns), r->ErrorPercent());
  EXPECT_LT(std::abs(r->ErrorPercent()), 3.0);
  EmulationOptions half;
  half.scale_kernels.push_back({".", 0.5});
  EXPECT_LE(EmulateSchedule(c, half).value().predicted_ns, r->predicted_ns);
}

}  // namespace
}  // namespace tracesmith::replay
