// Kernels replayed from CUDA graphs are named by the line that put them in
// the graph (GraphNode rows: made with a stack, cloned by instantiation),
// not by the line that replays the graph (issue #41 item 1).
#include "tracesmith/timeline/graph_kernels.h"

#include <gtest/gtest.h>

#include <map>

#include "test_traces.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/timeline/call_site.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

using Stacks = testing::StackMaker;

void Node(model::Trace& t, uint64_t node, uint64_t origin, uint32_t stack, uint32_t pid = 100) {
  t.Rows<model::GraphNode>().push_back(model::GraphNode{
      .graph_node_id = node, .origin_node_id = origin, .stack_id = stack, .pid = pid});
}

struct GraphTrace {
  Stacks s;
  uint32_t capture = 0, capture_mlp = 0, replay = 0;
  GraphTrace() {
    const uint32_t launch = s.Native(s.Module(1, "/x/libcuda.so.1"), "", 0x1376d);
    const uint32_t record = s.Python("record", "/home/u/proj/train.py", 30);
    capture = s.Stack({launch, s.Python("forward", "/home/u/proj/block.py", 17), record});
    capture_mlp = s.Stack({launch, s.Python("forward", "/home/u/proj/block.py", 21), record});
    replay = s.Stack({launch, s.Python("replay", "/home/u/proj/train.py", 44)});
    model::Trace& t = s.b.trace();
    // Three kernels of graph 5, replayed by one line (train.py:44).
    auto kernel = [&](const char* name, uint64_t start, uint64_t end, uint64_t node) {
      s.b.Kernel(name, 0, 7, start, end, start - 10, start - 5, 5, replay);
      t.Rows<model::KernelEvent>().back().graph_node_id = node;
    };
    kernel("k_attn", 100, 130, 201);  // 30 ns: node 201, a clone of 101 (made at block.py:17)
    kernel("k_mlp", 140, 190, 203);   // 50 ns: 203 <- 303 <- 103 (made at block.py:21)
    kernel("k_copy", 200, 207, 202);  // 7 ns: 202 <- 102, which no row says was made
    Node(t, 101, 0, capture);
    Node(t, 201, 101, 0);
    Node(t, 103, 0, capture_mlp);
    Node(t, 303, 103, 0);
    Node(t, 203, 303, 0);
    Node(t, 202, 102, 0);
    Node(t, 101, 0, replay, /*pid=*/999);  // another process's node 101: not this one's
    // An instantiation's own CREATED row of a node that also has its CLONED row: the clone wins.
    Node(t, 201, 0, replay);
  }
};

TEST(GraphKernelsTest, ClonesAreFollowedBackToTheNodeACallMade) {
  GraphTrace g;
  CompactTrace c;
  c.IngestAll(g.s.b.trace());
  c.Finalize();
  std::map<std::string, uint32_t> stack_of;  // kernel name -> StackOfOp
  for (uint32_t i = 0; i < c.ops().size(); ++i) {
    stack_of[std::string(c.String(c.ops()[i].name_id))] = c.StackOfOp(i);
    EXPECT_EQ(c.GraphOfOp(c.ops()[i]), 5u);
  }
  EXPECT_EQ(stack_of["k_attn"], g.capture);
  EXPECT_EQ(stack_of["k_mlp"], g.capture_mlp);
  EXPECT_EQ(stack_of["k_copy"], g.replay);  // origin unknown: the graph launch's stack
  EXPECT_EQ(c.graph_kernels().size(), 3u);
}

TEST(GraphKernelsTest, AnalyzeNamesTheCapturedLinesAndKeepsTheGraphTable) {
  GraphTrace g;
  CompactTrace c;
  c.IngestAll(g.s.b.trace());
  c.Finalize();
  AnalysisReport r = BuildReport(c, "graph.sbt");
  CallSiteNamer namer(c.meta());
  std::map<std::string, uint64_t> ns_of_site;
  for (const NamedStats& s : r.call_sites) ns_of_site[s.name] = s.stats.total_ns;
  EXPECT_EQ(ns_of_site.size(), 3u);
  EXPECT_EQ(ns_of_site[namer.Name(g.capture)], 30u);
  EXPECT_EQ(ns_of_site[namer.Name(g.capture_mlp)], 50u);
  EXPECT_EQ(ns_of_site[namer.Name(g.replay)], 7u);
  EXPECT_NE(namer.Name(g.capture).find("block.py:17"), std::string::npos) << namer.Name(g.capture);
  ASSERT_EQ(r.graphs.size(), 1u);
  EXPECT_EQ(r.graphs[0].graph_id, 5u);
  EXPECT_EQ(r.graphs[0].kernels, 3u);
  EXPECT_EQ(r.graphs[0].kernel_ns, 87u);
}

TEST(GraphKernelsTest, WithoutRowsEveryKernelKeepsItsLaunchStack) {
  GraphTrace g;
  g.s.b.trace().Rows<model::GraphNode>().clear();
  CompactTrace c;
  c.IngestAll(g.s.b.trace());
  c.Finalize();
  for (uint32_t i = 0; i < c.ops().size(); ++i) EXPECT_EQ(c.StackOfOp(i), g.replay);
}

TEST(GraphKernelsTest, InternKeepsOneIndexPerNodeAndNoneForNonGraphKernels) {
  GraphKernels k;
  EXPECT_EQ(k.Intern(1, 0, 7), 0u);
  const uint32_t a = k.Intern(1, 5, 7), b = k.Intern(1, 5, 8), c = k.Intern(2, 5, 7);
  EXPECT_EQ(k.Intern(1, 5, 7), a);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(k.size(), 3u);
  // A cycle of clones names nothing (and ends).
  model::Trace t;
  Node(t, 7, 8, 0, 1);
  Node(t, 8, 7, 0, 1);
  EXPECT_EQ(k.Resolve(t), 0u);
}

}  // namespace
}  // namespace tracesmith::analysis
