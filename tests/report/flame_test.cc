// Flame-graph data (report/flame.h): hand-built traces with known stacks and
// op times, so every weight is known exactly; then the folded export of a
// shipped real capture against its golden file.
#include "tracesmith/report/flame.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "analysis/test_traces.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith::report {
namespace {

using analysis::testing::StackMaker;

analysis::CompactTrace Compact(const model::Trace& t) {
  analysis::CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  return c;
}

std::string Folded(const FoldedStacks& f) {
  std::ostringstream out;
  WriteFolded(f, out);
  return out.str();
}

// Two stacks whose frames differ only in return addresses (same labels), one
// other stack, launches without a stack, a copy and a memset.
struct Fixture {
  StackMaker s;
  Fixture() {
    const uint32_t app = s.Module(1, "/x/app"), rt = s.Module(2, "/x/libcudart.so.13");
    const uint32_t main_a = s.Native(app, "main", 0x100), main_b = s.Native(app, "main", 0x180);
    const uint32_t launch = s.Native(rt, "", 0x1376d);
    const uint32_t py = s.Python("train", "train.py", 7);
    const uint32_t a = s.Stack({launch, py, main_a});
    const uint32_t b = s.Stack({launch, py, main_b});  // same labels as `a`
    const uint32_t c = s.Stack({s.Native(app, "helper;odd"), main_a});
    auto& t = s.b;
    t.Kernel("gemm", 0, 7, 100, 110, 90, 95, 0, a);            // 10 ns
    t.Kernel("gemm", 0, 7, 120, 127, 112, 115, 0, b);          // 7 ns, merges with the first
    t.Kernel("relu", 0, 7, 130, 135, 128, 129, 0, a);          // 5 ns
    t.Kernel("gemm", 0, 7, 140, 143, 136, 137, 0, c);          // 3 ns
    t.Kernel("relu", 0, 7, 150, 152, 146, 147);                // 2 ns, API call without a stack
    t.Kernel("relu", 0, 7, 160, 164);                          // 4 ns, no API call at all
    t.Memcpy(model::kCopyHtoD, 64, 0, 7, 170, 180, 165, 166);  // 10 ns
    t.Memset(64, 0, 7, 190, 191);                              // 1 ns
  }
};

TEST(FlameTest, GpuTimeWeightsAreExactAndIdenticalStacksMerge) {
  Fixture f;
  const FoldedStacks folded = FoldStacks(Compact(f.s.b.trace()), FlameWeight::kGpuTime);
  EXPECT_EQ(Folded(folded),
            "(no stack);[memcpy HtoD] 10\n"
            "(no stack);[memset] 1\n"
            "(no stack);relu 6\n"
            "main;helper_odd;gemm 3\n"
            "main;train (train.py:7);libcudart.so.13+0x1376d;gemm 17\n"
            "main;train (train.py:7);libcudart.so.13+0x1376d;relu 5\n");
  EXPECT_EQ(folded.total, 42u);
  EXPECT_EQ(folded.ops, 8u);
  EXPECT_EQ(folded.ops_without_stack, 4u);
}

TEST(FlameTest, LaunchWeightCountsOps) {
  Fixture f;
  const FoldedStacks folded = FoldStacks(Compact(f.s.b.trace()), FlameWeight::kLaunches);
  EXPECT_EQ(Folded(folded),
            "(no stack);[memcpy HtoD] 1\n"
            "(no stack);[memset] 1\n"
            "(no stack);relu 2\n"
            "main;helper_odd;gemm 1\n"
            "main;train (train.py:7);libcudart.so.13+0x1376d;gemm 2\n"
            "main;train (train.py:7);libcudart.so.13+0x1376d;relu 1\n");
  EXPECT_EQ(folded.total, 8u);
}

TEST(FlameTest, SeveralProcessesStartWithTheProcess) {
  analysis::testing::TraceBuilder b(10);
  b.Kernel("k", 0, 7, 100, 110, 90, 95);
  b.Pid(20);
  b.Kernel("k", 0, 7, 100, 103, 90, 95);
  const FoldedStacks folded = FoldStacks(Compact(b.trace()), FlameWeight::kGpuTime);
  EXPECT_EQ(Folded(folded), "pid 10;(no stack);k 10\npid 20;(no stack);k 3\n");
}

TEST(FlameTest, WeightNamesParse) {
  EXPECT_EQ(ParseFlameWeight("gpu-time").value(), FlameWeight::kGpuTime);
  EXPECT_EQ(ParseFlameWeight("launches").value(), FlameWeight::kLaunches);
  auto bad = ParseFlameWeight("time");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gpu-time"), std::string::npos);
}

TEST(FlameTest, TreeSumsPrefixesAndPrunesSmallSubtrees) {
  Fixture f;
  const FoldedStacks folded = FoldStacks(Compact(f.s.b.trace()), FlameWeight::kGpuTime);
  FlameTree tree = BuildFlameTree(folded);
  EXPECT_EQ(tree.root.value, 42u);
  ASSERT_EQ(tree.root.children.size(), 2u);  // main (25), (no stack) (17)
  EXPECT_EQ(tree.names[tree.root.children[0].name], "main");
  EXPECT_EQ(tree.root.children[0].value, 25u);
  EXPECT_EQ(tree.names[tree.root.children[1].name], "(no stack)");
  EXPECT_EQ(tree.root.children[1].value, 17u);
  const FlameNode& train = tree.root.children[0].children[0];
  EXPECT_EQ(tree.names[train.name], "train (train.py:7)");
  EXPECT_EQ(train.value, 22u);
  EXPECT_EQ(tree.nodes, 12u);  // all, main, train, cudart, gemm, relu, helper, gemm, none, 3 leaves
  EXPECT_EQ(tree.pruned_nodes, 0u);

  // Under 4: helper_odd's subtree (3) and the memset (1) go; values stay.
  FlameTree pruned = BuildFlameTree(folded, 4);
  EXPECT_EQ(pruned.root.value, 42u);
  EXPECT_EQ(pruned.root.children[0].value, 25u);
  EXPECT_EQ(pruned.root.children[0].children.size(), 1u);
  EXPECT_EQ(pruned.pruned_nodes, 2u);
  EXPECT_EQ(pruned.nodes, 9u);

  // At most 5 nodes: all 42, main 25, train 22, cudart 22, then of the two
  // tied at 17 the one that appeared first; a cap, ties or not.
  FlameTree capped = BuildFlameTree(folded, 0, 5);
  EXPECT_EQ(capped.nodes, 5u);
  EXPECT_EQ(capped.root.value, 42u);
}

// Many stacks of one launch each (every value tied): the cap still holds.
TEST(FlameTest, CapHoldsWhenEveryValueTies) {
  FoldedStacks folded;
  folded.weight = FlameWeight::kLaunches;
  for (int i = 0; i < 1000; ++i)
    folded.lines.push_back({"main;site" + std::to_string(1000 + i) + ";k", 1});
  folded.total = 1000;
  FlameTree capped = BuildFlameTree(folded, 1, 50);
  EXPECT_EQ(capped.nodes, 50u);
  EXPECT_EQ(capped.root.value, 1000u);
  EXPECT_EQ(capped.root.children.size(), 1u);  // main, then the sites that fit
}

// `export -f folded` of a shipped capture (native stacks, symbolized):
// compared with tests/report/golden/launch_loop.folded
// (TS_UPDATE_GOLDEN=1 rewrites it).
TEST(FlameTest, FoldedExportOfRealTraceMatchesGolden) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::string dir(src);
  auto folded = FoldStacksOfFile(dir + "/examples/traces/launch_loop.sbt", FlameWeight::kGpuTime);
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_EQ(folded->ops_without_stack, 0u);
  const std::string text = Folded(*folded);
  const std::string golden = dir + "/tests/report/golden/launch_loop.folded";
  if (std::getenv("TS_UPDATE_GOLDEN")) {
    ASSERT_TRUE(WriteStringToFile(golden, text).ok());
  }
  auto want = ReadFileToString(golden);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_EQ(text, *want);
}

}  // namespace
}  // namespace tracesmith::report
