// `tracesmith replay`'s CLI side without a GPU: the binary under test loads a
// fake replayer library (fake_replay_gpu.cc) through TRACESMITH_REPLAY_GPU_LIB.
// The progress line (issue #19 item 3) shows on a terminal, erased before
// each launch's block, and never on a pipe, with --json or with -q; --warm
// reaches the library; --warm with --range is refused before any library is
// needed; a library from before entry point V4 still replays (without the
// line) and refuses --warm by name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cli/cli_runner.h"
#include "tracesmith/replay/gpu_replayer.h"

namespace tracesmith {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fake replayer library of entry point version V, built beside this test.
const char* FakeReplay(int v) {
  static const std::string libs[] = {
      ::tracesmith::testing::TestBinaryDir() + "/libfake_replay_gpu_v3.so",
      ::tracesmith::testing::TestBinaryDir() + "/libfake_replay_gpu_v4.so",
      ::tracesmith::testing::TestBinaryDir() + "/libfake_replay_gpu_v5.so"};
  return libs[v - 3].c_str();
}

std::string Env(const char* lib) {
  return std::string("TRACESMITH_PROGRESS_DELAY_S=0 TRACESMITH_REPLAY_GPU_LIB=") + lib + " ";
}

std::string InTerminal(const char* lib, const std::string& args) {
  return RunInTerminal(Env(lib) + ::tracesmith::testing::TracesmithBin() + " replay " + args);
}

// Every launch block starts a line of its own: at the start of the output,
// after a newline, or right after the progress line was erased.
void ExpectBlocksOnTheirOwnLines(const std::string& tty, int launches) {
  for (int i = 0; i < launches; ++i) {
    const std::string block = "launch " + std::to_string(i) + "  fake_kernel";
    const size_t at = tty.find(block);
    ASSERT_NE(at, std::string::npos) << block << "\n" << tty;
    const bool own_line =
        at == 0 || tty[at - 1] == '\n' || (at >= 4 && tty.compare(at - 4, 4, "\r\033[K") == 0);
    EXPECT_TRUE(own_line) << block
                          << " follows: " << tty.substr(at >= 40 ? at - 40 : 0, at >= 40 ? 40 : at);
  }
}

TEST(ReplayProgress, ALineOnATerminalErasedBeforeEachLaunchBlock) {
  if (!HaveScript()) GTEST_SKIP() << "no `script`";
  const std::string tty = InTerminal(FakeReplay(4), "cap.sbt --iterations 4");
  EXPECT_TRUE(
      Has(tty, "fake replayer V4: size=" + std::to_string(sizeof(replay::ReplayGpuRequest)) +
                   " iterations=4 warm=0 json=0 hooks=1"))
      << tty;
  EXPECT_TRUE(Has(tty, "tracesmith: replay launch 0 (1 of 3) fake_kernel ")) << tty;
  EXPECT_TRUE(Has(tty, "tracesmith: replay launch 2 (3 of 3) fake_kernel ")) << tty;
  EXPECT_TRUE(Has(tty, "\r\033[K")) << "the line is erased";
  ExpectBlocksOnTheirOwnLines(tty, 3);
  // Output after the last block: the line erased for good (no line left
  // standing after the last launch's block).
  const size_t last = tty.rfind("launch 2  fake_kernel");
  EXPECT_FALSE(Has(tty.substr(last), "tracesmith: replay launch")) << tty.substr(last);
}

TEST(ReplayProgress, NeverOnAPipeWithJsonOrQuiet) {
  if (!HaveScript()) GTEST_SKIP() << "no `script`";
  const Result piped = RunTracesmith("replay cap.sbt", Env(FakeReplay(4)));
  EXPECT_EQ(piped.status, 0) << piped.out;
  EXPECT_TRUE(Has(piped.out, "hooks=0")) << piped.out;
  EXPECT_FALSE(Has(piped.out, "\r")) << piped.out;
  for (const char* option : {"--json", "-q", "--quiet"}) {
    const std::string tty = InTerminal(FakeReplay(4), std::string("cap.sbt ") + option);
    EXPECT_TRUE(Has(tty, "hooks=0")) << option << "\n" << tty;
    EXPECT_FALSE(Has(tty, "tracesmith: replay ")) << option << "\n" << tty;
  }
}

// --dry-run reads a whole trace: the same line while it loads, on the CPU.
TEST(ReplayProgress, DryRunOnATerminal) {
  if (!HaveScript()) GTEST_SKIP() << "no `script`";
  const char* src = std::getenv("TS_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::string trace = std::string(src) + "/examples/traces/mlp_train.sbt";
  std::string tty = InTerminal(FakeReplay(4), "--dry-run " + trace + " >/dev/null");
  EXPECT_TRUE(Has(tty, "tracesmith: replay reading " + trace)) << tty;
  EXPECT_TRUE(Has(tty, "\r\033[K")) << tty;
  tty = InTerminal(FakeReplay(4), "--dry-run -q " + trace + " >/dev/null");
  EXPECT_FALSE(Has(tty, "tracesmith: replay ")) << tty;
}

TEST(ReplayWarm, ReachesTheLibraryAndIsRefusedForRanges) {
  Result r = RunTracesmith("replay cap.sbt --warm --iterations 5", Env(FakeReplay(4)));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "iterations=5 warm=1 json=0")) << r.out;
  // Refused before the library is looked for: also without one.
  for (const char* lib : {FakeReplay(4), "/nonexistent/libtracesmith-replay-gpu.so"}) {
    r = RunTracesmith("replay cap.sbt --warm --range 0:3", Env(lib));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(Has(r.out,
                    "tracesmith: error: --warm times single launches: a range replay is timed on "
                    "the host clock"))
        << r.out;
    EXPECT_FALSE(Has(r.out, "fake replayer")) << r.out;
  }
  r = RunTracesmith("replay cap.sbt --range 0:3 --launch 2", Env(FakeReplay(4)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "--range and --launch exclude each other")) << r.out;
  // The options are on --help.
  r = RunTracesmith("replay --help");
  EXPECT_TRUE(Has(r.out, "--warm")) << r.out;
  EXPECT_TRUE(Has(r.out, "-q,--quiet")) << r.out;
  EXPECT_TRUE(Has(r.out, "L2 flushed")) << r.out;
}

TEST(ReplayOlderLibrary, ReplaysWithoutTheLineAndRefusesWarmByName) {
  Result r = RunTracesmith("replay cap.sbt --iterations 2 --json", Env(FakeReplay(3)));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer V3: cap.sbt iterations=2 launch=-1 json=1")) << r.out;
  if (HaveScript()) {
    const std::string tty = InTerminal(FakeReplay(3), "cap.sbt");
    EXPECT_TRUE(Has(tty, "fake replayer V3")) << tty;
    EXPECT_FALSE(Has(tty, "tracesmith: replay ")) << tty;
  }
  r = RunTracesmith("replay cap.sbt --warm", Env(FakeReplay(3)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, std::string("tracesmith: error: ") + FakeReplay(3) +
                             " is older than this tracesmith (it has TracesmithReplayGpuMainV3, "
                             "not TracesmithReplayGpuMainV5): it cannot time warm runs (--warm)"))
      << r.out;
  EXPECT_FALSE(Has(r.out, "fake replayer")) << r.out;
}

TEST(ReplayMetrics, PassedToTheCurrentLibraryRefusedByOlderOnesAndWithRangesOrDryRun) {
  Result r = RunTracesmith("replay cap.sbt --launch 2 --metrics", Env(FakeReplay(5)));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer metrics: (default set)")) << r.out;
  r = RunTracesmith("replay cap.sbt --metrics=dram__bytes.sum,gpu__time_duration.sum",
                    Env(FakeReplay(5)));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer metrics: dram__bytes.sum,gpu__time_duration.sum")) << r.out;
  r = RunTracesmith("replay cap.sbt", Env(FakeReplay(5)));
  EXPECT_TRUE(Has(r.out, "fake replayer metrics: (off)")) << r.out;
  r = RunTracesmith("replay cap.sbt --metrics", Env(FakeReplay(4)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out,
                  "(no TracesmithReplayGpuKernelMetrics): it cannot measure hardware "
                  "counters (--metrics)"))
      << r.out;
  EXPECT_FALSE(Has(r.out, "fake replayer")) << r.out;
  r = RunTracesmith("replay cap.sbt --metrics --range 0:3", Env(FakeReplay(5)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "--metrics measures single launches")) << r.out;
  r = RunTracesmith("replay cap.sbt --metrics --dry-run", Env(FakeReplay(5)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "leave out --dry-run")) << r.out;
  EXPECT_TRUE(Has(RunTracesmith("replay --help").out, "roofline verdict"));
}

TEST(ReplayGraphNode, PassedToTheCurrentLibraryAndRefusedByOlderOnes) {
  Result r = RunTracesmith("replay cap.sbt --launch 17 --node 3", Env(FakeReplay(5)));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer node: launch=17 node=3")) << r.out;
  r = RunTracesmith("replay cap.sbt --launch 17.3", Env(FakeReplay(5)));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer node: launch=17 node=3")) << r.out;
  r = RunTracesmith("replay cap.sbt --launch 17", Env(FakeReplay(5)));
  EXPECT_TRUE(Has(r.out, "fake replayer node: launch=17 node=-1")) << r.out;
  // A V4 library replays what it can (no node) and is refused a node by name.
  r = RunTracesmith("replay cap.sbt --launch 17", Env(FakeReplay(4)));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer V4:")) << r.out;
  r = RunTracesmith("replay cap.sbt --launch 17 --node 3", Env(FakeReplay(4)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out,
                  "(it has TracesmithReplayGpuMainV4, not TracesmithReplayGpuMainV5): "
                  "it cannot replay one node of a graph launch (--node)"))
      << r.out;
  r = RunTracesmith("replay cap.sbt --node 3", Env(FakeReplay(5)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "--node K replays node K of a graph launch")) << r.out;
  r = RunTracesmith("replay cap.sbt --launch 17.x", Env(FakeReplay(5)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "--launch: '17.x' is not N or G.K")) << r.out;
}

}  // namespace
}  // namespace tracesmith
