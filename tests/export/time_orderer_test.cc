// TimeOrderer: a view whose rows are out of order is released in exactly
// (start, longest first, row index) order, whichever path its bucket sort
// takes (insertion sort, or std::sort for a bucket a skewed trace filled).
#include "export/time_orderer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace tracesmith::exporter {
namespace {

using namespace model;

class RecordingSink : public EventSink {
 public:
  Status Begin(const ExportContext&) override { return OkStatus(); }
  void On(const KernelEvent& k) override { order.push_back(k.correlation_id); }
  Status Finish(ExportStats*) override { return OkStatus(); }
  std::vector<uint32_t> order;
};

std::vector<uint32_t> Expected(const std::vector<KernelEvent>& rows) {
  std::vector<uint32_t> idx(rows.size());
  for (uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
    if (rows[a].start_ns != rows[b].start_ns) return rows[a].start_ns < rows[b].start_ns;
    return rows[a].end_ns > rows[b].end_ns;
  });
  for (uint32_t& i : idx) i = rows[i].correlation_id;
  return idx;
}

// The release order of a view, with the first pass's hints (as ExportTrace
// does) and without (the orderer checks the rows itself): the same.
std::vector<uint32_t> Released(const Trace& t) {
  RecordingSink sink, hinted_sink;
  TimeOrderer orderer(&sink, UINT64_MAX);
  orderer.AddView(t);
  orderer.ReleaseAll();
  RowOrderHints hints;
  ScanRowOrder(t.Rows<KernelEvent>(), &hints.For<KernelEvent>(),
               [](const KernelEvent& k) { return k.start_ns; });
  EXPECT_FALSE(hints.For<KernelEvent>().sorted);
  TimeOrderer hinted(&hinted_sink, UINT64_MAX);
  hinted.AddView(t, &hints);
  hinted.ReleaseAll();
  EXPECT_EQ(hinted_sink.order, sink.order);
  return sink.order;
}

bool ScannedAsSorted(const std::vector<KernelEvent>& rows) {
  RowOrderHint hint;
  size_t visited = 0;
  ScanRowOrder(rows, &hint, [&](const KernelEvent& k) {
    ++visited;
    return k.start_ns;
  });
  EXPECT_EQ(visited, rows.size());
  EXPECT_EQ(hint.starts == nullptr, hint.sorted);
  return hint.sorted;
}

TEST(TimeOrderer, ScanFindsOutOfOrderRows) {
  auto kernel = [](uint64_t s, uint64_t e) {
    KernelEvent k{};
    k.start_ns = s;
    k.end_ns = e;
    return k;
  };
  EXPECT_TRUE(ScannedAsSorted({}));
  EXPECT_TRUE(ScannedAsSorted({kernel(5, 9), kernel(5, 9), kernel(5, 7), kernel(6, 6)}));
  EXPECT_FALSE(ScannedAsSorted({kernel(5, 7), kernel(5, 9)}));  // shorter first
  EXPECT_FALSE(ScannedAsSorted({kernel(1, 2), kernel(5, 9), kernel(4, 9), kernel(8, 9)}));
}

TEST(TimeOrderer, UnsortedViewReleasedInStartOrder) {
  std::mt19937_64 rng(7);
  Trace t;
  auto& rows = t.Rows<KernelEvent>();
  // Nearly sorted (launch order with jitter), plus exact ties in start.
  for (uint32_t i = 0; i < 200'000; ++i) {
    KernelEvent k{};
    k.start_ns = 1'000'000 + i * 1000ull + rng() % 50'000;
    if (i % 97 == 0 && i > 0) k.start_ns = rows.back().start_ns;  // a tie
    k.end_ns = k.start_ns + 1 + rng() % 5000;
    k.correlation_id = i + 1;
    rows.push_back(k);
  }
  EXPECT_EQ(Released(t), Expected(rows));
}

TEST(TimeOrderer, SkewedViewTakesTheLargeBucketPath) {
  std::mt19937_64 rng(9);
  Trace t;
  auto& rows = t.Rows<KernelEvent>();
  // Most starts within a few ns, one far outlier: nearly all keys share a
  // bucket (> 256 keys), sorted by std::sort.
  for (uint32_t i = 0; i < 50'000; ++i) {
    KernelEvent k{};
    k.start_ns = 5'000 + rng() % 64;
    k.end_ns = k.start_ns + rng() % 100;
    k.correlation_id = i + 1;
    rows.push_back(k);
  }
  rows[100].start_ns = rows[100].end_ns = 1ull << 50;
  EXPECT_EQ(Released(t), Expected(rows));
}

// Several kinds share start times (an NVTX range, its launch call, the
// kernel, a copy): the two-queue fast path must hand ties back to the full
// comparison, release everything, and keep (start, longest first, kind) order.
class KindRecordingSink : public EventSink {
 public:
  Status Begin(const ExportContext&) override { return OkStatus(); }
  void On(const NvtxRangeEvent& e) override { order.push_back(100000 + e.category); }
  void On(const ApiEvent& e) override { order.push_back(200000 + e.correlation_id); }
  void On(const KernelEvent& e) override { order.push_back(300000 + e.correlation_id); }
  void On(const MemcpyEvent& e) override { order.push_back(400000 + e.correlation_id); }
  Status Finish(ExportStats*) override { return OkStatus(); }
  std::vector<uint32_t> order;
};

TEST(TimeOrderer, TiesAcrossKindsReleasedInOrder) {
  Trace t;
  std::vector<uint32_t> expected;
  for (uint32_t i = 1; i <= 1000; ++i) {
    const uint64_t s = i * 100;
    if (i % 3 == 0) {  // four kinds at one start: longest first, then kind rank
      t.Rows<NvtxRangeEvent>().push_back({.start_ns = s, .end_ns = s + 90, .category = i});
      expected.push_back(100000 + i);
    }
    ApiEvent a{};
    a.start_ns = s;
    a.end_ns = s + 50;
    a.correlation_id = i;
    t.Rows<ApiEvent>().push_back(a);
    expected.push_back(200000 + i);
    KernelEvent k{};
    k.start_ns = s;
    k.end_ns = s + (i % 2 == 0 ? 50 : 10);  // equal end to the call: kind rank decides
    k.correlation_id = i;
    t.Rows<KernelEvent>().push_back(k);
    if (i % 5 == 0) {
      MemcpyEvent m{};
      m.start_ns = s;
      m.end_ns = s + 30;
      m.correlation_id = i;
      t.Rows<MemcpyEvent>().push_back(m);
    }
    if (i % 2 == 0) expected.push_back(300000 + i);  // ends with the call
    if (i % 5 == 0) expected.push_back(400000 + i);
    if (i % 2 != 0) expected.push_back(300000 + i);
  }
  KindRecordingSink sink;
  TimeOrderer orderer(&sink, UINT64_MAX);
  orderer.AddView(t);
  orderer.ReleaseAll();
  EXPECT_EQ(sink.order, expected);
}

}  // namespace
}  // namespace tracesmith::exporter
