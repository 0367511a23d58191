// `tracesmith replay`'s CLI side without a GPU: the binary under test loads a
// fake replayer library (fake_replay_gpu.cc) through TRACESMITH_REPLAY_GPU_LIB.
// The progress line (issue #19 item 3) shows on a terminal, erased before
// each launch's block, and never on a pipe, with --json or with -q; --warm
// reaches the library; --warm with --range is refused before any library is
// needed; a library of another build (without this version's entry point) is
// refused by name.
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

// The fake replayer library, built beside this test; `other_build`: the one
// whose entry point has another name.
const char* FakeReplay(bool other_build = false) {
  static const std::string libs[] = {
      ::tracesmith::testing::TestBinaryDir() + "/libfake_replay_gpu_current.so",
      ::tracesmith::testing::TestBinaryDir() + "/libfake_replay_gpu_other_build.so"};
  return libs[other_build ? 1 : 0].c_str();
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
  const std::string tty = InTerminal(FakeReplay(), "cap.sbt --iterations 4");
  EXPECT_TRUE(Has(tty, "fake replayer: size=" + std::to_string(sizeof(replay::ReplayGpuRequest)) +
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
  const Result piped = RunTracesmith("replay cap.sbt", Env(FakeReplay()));
  EXPECT_EQ(piped.status, 0) << piped.out;
  EXPECT_TRUE(Has(piped.out, "hooks=0")) << piped.out;
  EXPECT_FALSE(Has(piped.out, "\r")) << piped.out;
  for (const char* option : {"--json", "-q", "--quiet"}) {
    const std::string tty = InTerminal(FakeReplay(), std::string("cap.sbt ") + option);
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
  std::string tty = InTerminal(FakeReplay(), "--dry-run " + trace + " >/dev/null");
  EXPECT_TRUE(Has(tty, "tracesmith: replay reading " + trace)) << tty;
  EXPECT_TRUE(Has(tty, "\r\033[K")) << tty;
  tty = InTerminal(FakeReplay(), "--dry-run -q " + trace + " >/dev/null");
  EXPECT_FALSE(Has(tty, "tracesmith: replay ")) << tty;
}

TEST(ReplayWarm, ReachesTheLibraryAndIsRefusedForRanges) {
  Result r = RunTracesmith("replay cap.sbt --warm --iterations 5", Env(FakeReplay()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "iterations=5 warm=1 json=0")) << r.out;
  // Refused before the library is looked for: also without one.
  for (const char* lib : {FakeReplay(), "/nonexistent/libtracesmith-replay-gpu.so"}) {
    r = RunTracesmith("replay cap.sbt --warm --range 0:3", Env(lib));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(Has(r.out,
                    "tracesmith: error: --warm times single launches: a range replay is timed on "
                    "the host clock"))
        << r.out;
    EXPECT_FALSE(Has(r.out, "fake replayer")) << r.out;
  }
  r = RunTracesmith("replay cap.sbt --range 0:3 --launch 2", Env(FakeReplay()));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "--range and --launch exclude each other")) << r.out;
  // The options are on --help.
  r = RunTracesmith("replay --help");
  EXPECT_TRUE(Has(r.out, "--warm")) << r.out;
  EXPECT_TRUE(Has(r.out, "-q,--quiet")) << r.out;
  EXPECT_TRUE(Has(r.out, "L2 flushed")) << r.out;
}

TEST(ReplayLibraryOfAnotherBuild, RefusedByName) {
  const Result r = RunTracesmith("replay cap.sbt", Env(FakeReplay(/*other_build=*/true)));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, std::string("tracesmith: error: ") + FakeReplay(true) +
                             ": no TracesmithReplayGpuMainV5: not the GPU replayer of this "
                             "tracesmith (one of another build?); rebuild the target "
                             "tracesmith-replay-gpu"))
      << r.out;
  EXPECT_FALSE(Has(r.out, "fake replayer")) << r.out;
}

TEST(ReplayMetrics, PassedToTheLibraryRefusedWithRangesOrDryRun) {
  Result r = RunTracesmith("replay cap.sbt --launch 2 --metrics", Env(FakeReplay()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer metrics: (default set)")) << r.out;
  r = RunTracesmith("replay cap.sbt --metrics=dram__bytes.sum,gpu__time_duration.sum",
                    Env(FakeReplay()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer metrics: dram__bytes.sum,gpu__time_duration.sum")) << r.out;
  r = RunTracesmith("replay cap.sbt", Env(FakeReplay()));
  EXPECT_TRUE(Has(r.out, "fake replayer metrics: (off)")) << r.out;
  r = RunTracesmith("replay cap.sbt --metrics --range 0:3", Env(FakeReplay()));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "--metrics measures single launches")) << r.out;
  EXPECT_FALSE(Has(r.out, "fake replayer")) << r.out;
  r = RunTracesmith("replay cap.sbt --metrics --dry-run", Env(FakeReplay()));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "leave out --dry-run")) << r.out;
  EXPECT_TRUE(Has(RunTracesmith("replay --help").out, "roofline verdict"));
}

TEST(ReplayGraphNode, PassedToTheLibrary) {
  Result r = RunTracesmith("replay cap.sbt --launch 17 --node 3", Env(FakeReplay()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer node: launch=17 node=3")) << r.out;
  r = RunTracesmith("replay cap.sbt --launch 17.3", Env(FakeReplay()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "fake replayer node: launch=17 node=3")) << r.out;
  r = RunTracesmith("replay cap.sbt --launch 17", Env(FakeReplay()));
  EXPECT_TRUE(Has(r.out, "fake replayer node: launch=17 node=-1")) << r.out;
  r = RunTracesmith("replay cap.sbt --node 3", Env(FakeReplay()));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "--node K replays node K of a graph launch")) << r.out;
  r = RunTracesmith("replay cap.sbt --launch 17.x", Env(FakeReplay()));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "--launch: '17.x' is not N or G.K")) << r.out;
}

}  // namespace
}  // namespace tracesmith
