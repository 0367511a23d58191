// The analysis's one parallel part: ComputeTimeline spreads the per-stream
// work over threads (each worker takes every n-th stream, writes only its
// own slots and reads the shared CompactTrace). The result does not depend
// on the thread count. A binary of its own so that the ThreadSanitizer
// suite (label tsan) builds this and not every analysis test.
#include <gtest/gtest.h>

#include "tracesmith/model/synthetic.h"
#include "tracesmith/timeline/compact_trace.h"
#include "tracesmith/timeline/timeline.h"

namespace tracesmith::analysis {
namespace {

TEST(ParallelTimeline, EqualsSequentialWhateverTheThreadCount) {
  model::SyntheticOptions so;
  so.kernels = 30000;
  so.streams = 16;
  CompactTrace c;
  c.IngestAll(model::MakeSyntheticTrace(so));
  c.Finalize();
  const TimelineResult one = ComputeTimeline(c, 1);
  ASSERT_EQ(one.streams.size(), 16u);
  for (unsigned threads : {3u, 4u, 32u}) {  // uneven shares; more threads than streams
    SCOPED_TRACE(threads);
    const TimelineResult many = ComputeTimeline(c, threads);
    ASSERT_EQ(one.streams.size(), many.streams.size());
    for (size_t k = 0; k < one.streams.size(); ++k) {
      EXPECT_EQ(one.streams[k].lane, many.streams[k].lane);
      EXPECT_EQ(one.streams[k].kernels, many.streams[k].kernels);
      EXPECT_EQ(one.streams[k].busy_ns, many.streams[k].busy_ns);
      EXPECT_EQ(one.streams[k].state_ns, many.streams[k].state_ns);
      EXPECT_EQ(one.streams[k].idle.ns, many.streams[k].idle.ns);
    }
    ASSERT_EQ(one.devices.size(), many.devices.size());
    for (size_t d = 0; d < one.devices.size(); ++d) {
      EXPECT_EQ(one.devices[d].busy_ns, many.devices[d].busy_ns);
      EXPECT_EQ(one.devices[d].stream_busy_sum_ns, many.devices[d].stream_busy_sum_ns);
      EXPECT_EQ(one.devices[d].max_concurrency, many.devices[d].max_concurrency);
    }
  }
}

}  // namespace
}  // namespace tracesmith::analysis
