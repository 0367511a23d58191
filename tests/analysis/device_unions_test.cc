// A device's busy time, kernel / copy and NCCL / compute overlaps and idle gaps are summed as
// the merged unions grow (timeline.cc, RunningUnion and UnionPair), not from stored lists.
// Checked against the lists (AppendUnion, TotalLength, IntersectionLength, each gap
// classified by the op opening the next interval) on random traces full of overlaps,
// touching intervals, equal starts and long ops spanning many others.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "analysis/test_traces.h"
#include "tracesmith/timeline/compact_trace.h"
#include "tracesmith/timeline/sorter.h"
#include "tracesmith/timeline/timeline.h"

namespace tracesmith::analysis {
namespace {

using testing::TraceBuilder;

struct Lists {
  std::vector<Interval> all, kernel, copy, nccl, compute;
  IdleBreakdown idle;
};

Lists FromLists(const CompactTrace& t, uint32_t device) {
  Lists l;
  const std::vector<uint32_t> lanes = t.DeviceLanes(device);
  const IdleClassifier classifier(t);
  std::vector<uint32_t> openers;
  const auto ops = t.ops();
  ForEachOpByStart(
      t, lanes, [](const GpuOp&) { return true; },
      [&](uint32_t i, uint64_t s, uint64_t e, const GpuOp&) {
        const size_t before = l.all.size();
        AppendUnion(&l.all, s, e);
        if (l.all.size() != before) openers.push_back(i);
        if (ops[i].kind() == OpKind::kKernel) {
          AppendUnion(&l.kernel, s, e);
          const bool nccl = t.String(ops[i].name_id).starts_with("nccl");
          AppendUnion(nccl ? &l.nccl : &l.compute, s, e);
        } else {
          AppendUnion(&l.copy, s, e);
        }
      });
  uint64_t at = t.window_begin();
  for (size_t k = 0; k < l.all.size(); ++k) {
    if (l.all[k].start > at) classifier.Classify(at, l.all[k].start, openers[k], &l.idle);
    at = l.all[k].end;
  }
  if (t.window_end() > at) l.idle.Add(IdleCause::kNothingQueued, t.window_end() - at);
  return l;
}

TEST(DeviceUnions, SummedAsTheyGrowEqualTheLists) {
  uint64_t overlaps = 0, nccl_overlaps = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](uint64_t n) { return uint64_t(rng() % n); };
    TraceBuilder b;
    const uint64_t span = seed % 3 == 0 ? 50 : 20'000;  // short: equal and touching times
    for (int k = 0, n = 10 + int(pick(120)); k < n; ++k) {
      const uint32_t stream = 1 + uint32_t(pick(4));
      const uint64_t start = pick(span);
      const uint64_t end = start + (pick(10) == 0 ? pick(span) : pick(span / 10 + 2));
      switch (pick(5)) {
        case 0:
          b.Memcpy(model::kCopyHtoD, 64, 0, stream, start, end, start, start + 1);
          break;
        case 1:
          b.Kernel("ncclKernel_AllReduce", 0, stream, start, end, start, start + 1);
          break;
        default:
          b.Kernel(pick(2) ? "gemm" : "relu", 0, stream, start, end, start, start + 1);
          break;
      }
    }
    CompactTrace c;
    c.IngestAll(b.trace());
    c.Finalize();
    const TimelineResult r = ComputeTimeline(c, 1);
    ASSERT_EQ(r.devices.size(), 1u) << "seed " << seed;
    const DeviceTimeline& d = r.devices[0];
    const Lists l = FromLists(c, d.device);
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_EQ(d.busy_ns, TotalLength(l.all));
    EXPECT_EQ(d.kernel_ns, TotalLength(l.kernel));
    EXPECT_EQ(d.copy_ns, TotalLength(l.copy));
    EXPECT_EQ(d.kernel_copy_overlap_ns, IntersectionLength(l.kernel, l.copy));
    if (!l.nccl.empty()) {
      EXPECT_EQ(d.nccl_ns, TotalLength(l.nccl));
      EXPECT_EQ(d.compute_ns, TotalLength(l.compute));
      EXPECT_EQ(d.nccl_compute_overlap_ns, IntersectionLength(l.nccl, l.compute));
    }
    EXPECT_EQ(d.idle.ns, l.idle.ns);
    EXPECT_EQ(d.idle.gaps, l.idle.gaps);
    overlaps += d.kernel_copy_overlap_ns > 0;
    nccl_overlaps += d.nccl_compute_overlap_ns > 0;
    if (::testing::Test::HasFailure()) return;
  }
  // The random traces must reach the cases the running sums are about.
  EXPECT_GT(overlaps, 100u);
  EXPECT_GT(nccl_overlaps, 100u);
}

}  // namespace
}  // namespace tracesmith::analysis
