// FillRecordedTimes: a recorded launch's time in the program from the trace's
// rows that carry its correlation id.
#include "tracesmith/replay/recorded_times.h"

#include <gtest/gtest.h>

#include "testing/temp_file.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::replay {
namespace {

TEST(RecordedTimes, ALaunchTakesItsKernelRowAndAGraphTheExtentOfItsGpuRows) {
  model::Trace t;
  auto kernel = [&](uint32_t corr, uint64_t start, uint64_t end) {
    model::KernelEvent k{.start_ns = start, .end_ns = end};
    k.correlation_id = corr;
    t.Rows<model::KernelEvent>().push_back(k);
  };
  kernel(7, 1'000, 1'400);  // a plain launch: 400 ns
  // A graph launch (correlation 9): a kernel, a memset and a memcpy node
  // from 10'000 to 10'900 on the GPU...
  kernel(9, 10'000, 10'300);
  t.Rows<model::KernelEvent>().back().graph_id = 3;
  model::MemsetEvent ms{.start_ns = 10'350, .end_ns = 10'500};
  ms.correlation_id = 9;
  ms.graph_id = 3;
  t.Rows<model::MemsetEvent>().push_back(ms);
  model::MemcpyEvent mc{.start_ns = 10'600, .end_ns = 10'900};
  mc.correlation_id = 9;
  mc.graph_id = 3;
  t.Rows<model::MemcpyEvent>().push_back(mc);
  // ...around which the replay capture copied the memory out, with the
  // same correlation id but no graph id...
  for (uint64_t at : {5'000u, 8'000'000u}) {
    model::MemcpyEvent own{.start_ns = at, .end_ns = at + 600'000};
    own.correlation_id = 9;
    t.Rows<model::MemcpyEvent>().push_back(own);
  }
  // ...whose host call lasted 68 ms (the replay capture copied its memory
  // inside it): not the graph's time.
  model::GraphLaunchEvent g{.start_ns = 9'000, .end_ns = 68'000'000};
  g.correlation_id = 9;
  t.Rows<model::GraphLaunchEvent>().push_back(g);
  kernel(11, 20'000, 20'100);  // another launch's row
  ::tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(t, path.path(), {}).ok());

  format::ReplayCapture capture;
  format::LaunchRecord l;
  l.correlation_id = 7;
  capture.launches.push_back(l);
  format::LaunchRecord unknown;
  unknown.correlation_id = 99;  // no row: stays unknown
  capture.launches.push_back(unknown);
  format::GraphLaunchRecord graph;
  graph.correlation_id = 9;
  capture.graphs.push_back(graph);
  FillRecordedTimes(path.path(), &capture);
  EXPECT_EQ(capture.launches[0].recorded_ns, 400u);
  EXPECT_EQ(capture.launches[1].recorded_ns, 0u);
  EXPECT_EQ(capture.graphs[0].recorded_ns, 900u);
}

TEST(RecordedTimes, AnUnreadableTraceLeavesTheTimesUnknown) {
  format::ReplayCapture capture;
  format::LaunchRecord l;
  l.correlation_id = 7;
  capture.launches.push_back(l);
  FillRecordedTimes("/nonexistent/trace.sbt", &capture);
  EXPECT_EQ(capture.launches[0].recorded_ns, 0u);
}

}  // namespace
}  // namespace tracesmith::replay
