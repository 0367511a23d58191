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

std::vector<uint32_t> Released(const Trace& t) {
  RecordingSink sink;
  TimeOrderer orderer(&sink, UINT64_MAX);
  orderer.AddView(t);
  orderer.ReleaseAll();
  return sink.order;
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

}  // namespace
}  // namespace tracesmith::exporter
