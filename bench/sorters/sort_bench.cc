// The strategies of the one sorter for nearly-sorted data (timeline/sorter.h)
// on the same inputs (issue #20 item 4): WindowedSort (insertion with a
// bounded look-back, in place; analysis's lanes), BucketSort (a stable
// scatter on the high bits of the start, insertion inside each bucket, into
// a second array) and SortNearlySorted (the first within a budget, else the
// second; the export's row order). Each is
// run on the shape of the other caller too: 8-byte packed keys (start above
// row index, as SortedRowOrder sorts them) and 32-byte rows (GpuOp, as
// CompactTrace sorts a lane). Inputs: starts 1 us apart (+/- jitter), then a
// share of rows moved by up to a given distance, as CUPTI's per-buffer,
// per-kind delivery leaves a lane. Results: docs/benchmarks.md.
//
//   ninja -C build/release sort_bench && build/release/bench/sort_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tracesmith/timeline/sorter.h"

namespace {

struct Row {  // the size and key of analysis::GpuOp
  uint64_t start_ns, end_ns, a, b;
};
static_assert(sizeof(Row) == 32);

// n starts, nearly sorted: every `every`-th row swapped with one up to
// `distance` rows later (every == 0: sorted).
std::vector<uint64_t> NearlySorted(size_t n, size_t every, size_t distance) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = 1'000'000'000 + i * 1000 + rng() % 200;
  if (every)
    for (size_t i = 0; i + distance < n; i += every) std::swap(s[i], s[i + 1 + rng() % distance]);
  return s;
}

// Packed keys as SortedRowOrder builds them: (start - lo) << index_bits | i.
std::vector<uint64_t> PackedKeys(const std::vector<uint64_t>& starts, int* index_bits) {
  const size_t n = starts.size();
  const uint64_t lo = *std::min_element(starts.begin(), starts.end());
  *index_bits = static_cast<int>(std::bit_width(n - 1));
  std::vector<uint64_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = ((starts[i] - lo) << *index_bits) | i;
  return keys;
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1 << 20, 1 << 22})
    for (auto [every, distance] : {std::pair<int64_t, int64_t>{0, 0}, {100, 64}, {10, 1024}})
      b->Args({n, every, distance});
  b->ArgNames({"n", "every", "dist"})->Unit(benchmark::kMillisecond);
}

// The buckets SortedRowOrder uses for n packed keys up to `hi`: about 8
// keys each, at most 2^20; a key's bucket is key >> shift.
struct Buckets {
  size_t count;
  int shift;
};
Buckets BucketsFor(const std::vector<uint64_t>& keys) {
  const uint64_t hi = *std::max_element(keys.begin(), keys.end());
  const int bucket_bits = std::min(20, static_cast<int>(std::bit_width(keys.size() / 8)));
  return {(size_t{1} << bucket_bits) + 1,
          std::max(0, static_cast<int>(std::bit_width(hi)) - bucket_bits)};
}

void KeysBucket(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  int index_bits = 0;
  const auto keys = PackedKeys(NearlySorted(n, state.range(1), state.range(2)), &index_bits);
  const Buckets buckets = BucketsFor(keys);
  std::vector<uint64_t> out(n);
  for (auto _ : state) {
    tracesmith::analysis::BucketSort(
        keys.data(), n, buckets.count, [&](uint64_t k) { return k >> buckets.shift; },
        [](uint64_t a, uint64_t b) { return a < b; }, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * n));
}

void KeysWindowed(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  int index_bits = 0;
  const auto keys = PackedKeys(NearlySorted(n, state.range(1), state.range(2)), &index_bits);
  std::vector<uint64_t> work(n);
  for (auto _ : state) {
    state.PauseTiming();  // the caller sorts its scratch keys in place: no copy
    std::memcpy(work.data(), keys.data(), n * sizeof(uint64_t));
    state.ResumeTiming();
    tracesmith::analysis::WindowedSort(work.begin(), work.end(),
                                       [](uint64_t a, uint64_t b) { return a < b; });
    benchmark::DoNotOptimize(work.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * n));
}

std::vector<Row> Rows(size_t n, size_t every, size_t distance) {
  std::vector<Row> rows(n);
  const auto s = NearlySorted(n, every, distance);
  for (size_t i = 0; i < n; ++i) rows[i] = {s[i], s[i] + 500, i, 0};
  return rows;
}

bool RowLess(const Row& a, const Row& b) {
  return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns < b.end_ns);
}

void RowsWindowed(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const auto rows = Rows(n, state.range(1), state.range(2));
  std::vector<Row> work(n);
  for (auto _ : state) {
    state.PauseTiming();
    work = rows;
    state.ResumeTiming();
    tracesmith::analysis::WindowedSort(work.begin(), work.end(), RowLess);
    benchmark::DoNotOptimize(work.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * n));
}

// Bucket sort of rows in place needs a second array of rows (out), then the
// result copied back: both counted.
void RowsBucket(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const auto rows = Rows(n, state.range(1), state.range(2));
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Row& r : rows) lo = std::min(lo, r.start_ns), hi = std::max(hi, r.start_ns);
  const int bucket_bits = std::min(20, static_cast<int>(std::bit_width(n / 8)));
  const int shift = std::max(0, static_cast<int>(std::bit_width(hi - lo)) - bucket_bits);
  std::vector<Row> work(n), out(n);
  for (auto _ : state) {
    state.PauseTiming();
    work = rows;
    state.ResumeTiming();
    tracesmith::analysis::BucketSort(
        work.data(), n, (size_t{1} << bucket_bits) + 1,
        [&](const Row& r) { return (r.start_ns - lo) >> shift; }, RowLess, out.data());
    std::memcpy(work.data(), out.data(), n * sizeof(Row));
    benchmark::DoNotOptimize(work.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * n));
}

// What the export now runs (SortNearlySorted): insertion in place within 2
// moves per key, else the bucket sort. The keys are copied back before each
// run (not timed), as the caller's scratch keys are sorted in place.
void KeysAdaptive(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  int index_bits = 0;
  const auto keys = PackedKeys(NearlySorted(n, state.range(1), state.range(2)), &index_bits);
  const Buckets buckets = BucketsFor(keys);
  std::vector<uint64_t> work(n), out(n);
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(work.data(), keys.data(), n * sizeof(uint64_t));
    state.ResumeTiming();
    benchmark::DoNotOptimize(tracesmith::analysis::SortNearlySorted(
        work.data(), n, out.data(), buckets.count, [&](uint64_t k) { return k >> buckets.shift; },
        [](uint64_t a, uint64_t b) { return a < b; }));
  }
  state.SetItemsProcessed(int64_t(state.iterations() * n));
}

BENCHMARK(KeysBucket)->Apply(Args);
BENCHMARK(KeysAdaptive)->Apply(Args);
BENCHMARK(KeysWindowed)->Apply(Args);
BENCHMARK(RowsBucket)->Apply(Args);
BENCHMARK(RowsWindowed)->Apply(Args);

}  // namespace

BENCHMARK_MAIN();
