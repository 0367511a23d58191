// RecordStore: the arrays and the packed form hand out the same records in the same order
// (lanes renumbered, each lane in the stable (start, end) order of arrival, times converted,
// a lane sorted again where conversion changed its order), filter alike, and a whole
// CompactTrace in either form gives the same ops, calls, joins and windows.
#include "tracesmith/timeline/record_store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "tracesmith/model/synthetic.h"
#include "tracesmith/timeline/compact_trace.h"
#include "tracesmith/timeline/index_column.h"

namespace tracesmith::analysis {
namespace {

bool Same(const GpuOp& a, const GpuOp& b) { return std::memcmp(&a, &b, sizeof(GpuOp)) == 0; }
bool Same(const HostCall& a, const HostCall& b) {
  return std::memcmp(&a, &b, sizeof(HostCall)) == 0;
}

// Ops of `lanes` lanes arriving interleaved, each lane nearly in order (jitter), with ties,
// and in lane 1 a few far out of place (past WindowedSort's window and LaneBuilder's ring).
std::vector<GpuOp> Arrivals(size_t n, uint32_t lanes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<GpuOp> ops;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t lane = uint32_t(rng() % lanes);
    GpuOp o;
    o.start_ns = 1'000'000 + i * 100 + rng() % 2'000;
    if (i % 7 == 0 && !ops.empty()) o.start_ns = ops.back().start_ns;  // ties
    if (lane == 1 && i % 5'000 == 4'999) o.start_ns /= 4;              // far displaced
    o.end_ns = o.start_ns + rng() % 5 * 300;
    o.name_id = uint32_t(rng() % 50);
    o.correlation_id = uint32_t(i + 1);
    o.lane_kind = lane << 2 | uint32_t(rng() % 3);
    o.extra = uint32_t(i % 11 ? 0 : i);
    ops.push_back(o);
  }
  return ops;
}

// What Finish must give: lanes renumbered, each stable-sorted by (start, end), converted,
// stable-sorted again.
std::vector<GpuOp> Expected(std::vector<GpuOp> ops, const std::vector<uint32_t>& remap,
                            const std::vector<const ClockMap*>& maps) {
  for (GpuOp& o : ops) OpCodec::SetLane(&o, remap[o.lane()]);
  std::stable_sort(ops.begin(), ops.end(),
                   [](const GpuOp& a, const GpuOp& b) { return a.lane() < b.lane(); });
  auto lane_begin = ops.begin();
  while (lane_begin != ops.end()) {
    const uint32_t l = lane_begin->lane();
    auto lane_end =
        std::find_if(lane_begin, ops.end(), [&](const GpuOp& o) { return o.lane() != l; });
    std::stable_sort(lane_begin, lane_end, ByStartEnd());
    for (auto it = lane_begin; it != lane_end; ++it) OpCodec::Convert(maps[l], &*it);
    std::stable_sort(lane_begin, lane_end, ByStartEnd());
    lane_begin = lane_end;
  }
  return ops;
}

void ExpectSame(const RecordStore<OpCodec>& s, const std::vector<GpuOp>& want) {
  ASSERT_EQ(s.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (!Same(s[i], want[i])) {
      ADD_FAILURE() << RecordFormName(s.form()) << ": record " << i << " differs";
      return;
    }
  size_t n = 0;
  s.ForEach([&](size_t i, const GpuOp& o) {
    EXPECT_EQ(i, n);
    if (n < want.size() && !Same(o, want[n])) ADD_FAILURE() << "ForEach: record " << n;
    ++n;
  });
  EXPECT_EQ(n, want.size());
}

TEST(RecordStore, BothFormsGiveTheRecordsInLaneAndTimeOrder) {
  constexpr uint32_t kLanes = 5;
  // Lane 2's clock squeezes time threefold: starts collide and conversion breaks the order
  // by end; lane 4's is an offset.
  ClockMap squeeze{
      .g0 = 0, .r0 = 5'000'000'000, .g1 = 3'000'000'000, .r1 = 6'000'000'000, .linear = true};
  ClockMap offset{.g0 = 0, .r0 = 7'000, .g1 = 0, .r1 = 7'000, .linear = false};
  const std::vector<uint32_t> remap = {3, 2, 4, 0, 1};
  std::vector<const ClockMap*> maps(kLanes, nullptr);
  maps[remap[2]] = &squeeze;
  maps[remap[4]] = &offset;
  const std::vector<GpuOp> arrivals = Arrivals(40'000, kLanes, 7);
  const std::vector<GpuOp> want = Expected(arrivals, remap, maps);
  size_t resorted[2] = {};
  std::vector<LaneRange> ranges[2];
  for (RecordForm form : {RecordForm::kArrays, RecordForm::kPacked}) {
    RecordStore<OpCodec> s;
    s.SetForm(form);
    for (const GpuOp& o : arrivals) s.Add(o);
    EXPECT_EQ(s.size(), arrivals.size());
    resorted[int(form)] = s.Finish(remap, [&](uint32_t l) { return maps[l]; });
    ExpectSame(s, want);
    ranges[int(form)].assign(kLanes, LaneRange{});
    s.Ranges(&ranges[int(form)]);
    EXPECT_GT(s.bytes(), 0u);
  }
  EXPECT_EQ(resorted[0], 1u);  // lane 1's far displaced records
  EXPECT_EQ(resorted[1], resorted[0]);
  for (uint32_t l = 0; l < kLanes; ++l) {
    EXPECT_EQ(ranges[0][l].begin, ranges[1][l].begin) << l;
    EXPECT_EQ(ranges[0][l].end, ranges[1][l].end) << l;
  }
}

TEST(RecordStore, BothFormsFilterAlike) {
  const std::vector<GpuOp> arrivals = Arrivals(20'000, 3, 11);
  const std::vector<uint32_t> remap = {0, 1, 2};
  auto no_map = [](uint32_t) { return static_cast<const ClockMap*>(nullptr); };
  const std::vector<GpuOp> all = Expected(arrivals, remap, {nullptr, nullptr, nullptr});
  // A time window (one run per lane), then every third record of what is left.
  const uint64_t from = 1'400'000, to = 2'100'000;
  auto in_window = [&](size_t, const GpuOp& o) { return o.end_ns > from && o.start_ns < to; };
  std::vector<GpuOp> want;
  for (const GpuOp& o : all)
    if (in_window(0, o)) want.push_back(o);
  std::vector<GpuOp> want3;
  for (size_t i = 0; i < want.size(); ++i)
    if (i % 3 == 0) want3.push_back(want[i]);
  for (RecordForm form : {RecordForm::kArrays, RecordForm::kPacked}) {
    RecordStore<OpCodec> s;
    s.SetForm(form);
    for (const GpuOp& o : arrivals) s.Add(o);
    s.Finish(remap, no_map);
    s.Filter(in_window);
    ExpectSame(s, want);
    s.Filter([](size_t i, const GpuOp&) { return i % 3 == 0; });
    ExpectSame(s, want3);
    s.Filter([](size_t, const GpuOp&) { return false; });
    EXPECT_TRUE(s.empty());
  }
}

// Two processes (clock anchors put them on one clock) of a synthetic trace.
model::Trace TwoProcesses() {
  model::Trace t;
  for (uint32_t pid : {100u, 200u}) {
    model::SyntheticOptions o;
    o.kernels = 30'000;
    o.seed = pid;
    o.pid = pid;
    model::Trace p = model::MakeSyntheticTrace(o);
    if (t.strings.size() == 0) t.strings = p.strings;
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (model::RecordTraits<T>::kIsEvent)
        for (const T& r : p.Rows<T>()) t.Rows<T>().push_back(r);
    });
    for (uint64_t g : {uint64_t(1), uint64_t(1'000'000'000'000)}) {
      model::ClockAnchor a;
      a.pid = pid;
      a.gpu_ns = g;
      a.realtime_ns = g + (g > 1 ? 3'000 : 0) + pid;  // drifts 3 us over the run
      t.Rows<model::ClockAnchor>().push_back(a);
    }
  }
  return t;
}

void ExpectSameTraces(const CompactTrace& a, const CompactTrace& b) {
  ASSERT_EQ(a.ops().size(), b.ops().size());
  ASSERT_EQ(a.calls().size(), b.calls().size());
  for (uint32_t i = 0; i < a.ops().size(); ++i) {
    ASSERT_TRUE(Same(a.ops()[i], b.ops()[i])) << "op " << i;
    ASSERT_EQ(a.CallOfOp(i), b.CallOfOp(i)) << "op " << i;
    ASSERT_EQ(a.CallSpanOfOp(i), b.CallSpanOfOp(i)) << "op " << i;  // fields read alone
    ASSERT_EQ(a.StackOfOp(i), b.StackOfOp(i)) << "op " << i;
    if (const uint32_t c = b.CallOfOp(i); c != kNone) {
      ASSERT_EQ(b.CallSpanOfOp(i), (Interval{b.calls()[c].start_ns, b.calls()[c].end_ns}));
    }
  }
  for (uint32_t i = 0; i < a.calls().size(); ++i) {
    ASSERT_TRUE(Same(a.calls()[i], b.calls()[i])) << "call " << i;
    ASSERT_EQ(a.OpOfCall(i), b.OpOfCall(i)) << "call " << i;
  }
  for (uint32_t l = 0; l < a.lanes().size(); ++l) {
    EXPECT_EQ(a.lane_range(l).begin, b.lane_range(l).begin);
    EXPECT_EQ(a.lane_range(l).end, b.lane_range(l).end);
  }
  EXPECT_EQ(a.window_begin(), b.window_begin());
  EXPECT_EQ(a.window_end(), b.window_end());
}

TEST(RecordStore, CompactTraceIsTheSameInBothForms) {
  const model::Trace t = TwoProcesses();
  CompactTrace c[2];
  for (RecordForm form : {RecordForm::kArrays, RecordForm::kPacked}) {
    CompactTrace& x = c[int(form)];
    x.SetRecordForm(form);
    x.SetInversionWindow(777);  // packed: the op of each call found window by window
    x.IngestAll(t);
    x.Finalize();
    EXPECT_EQ(x.record_form(), form);
    EXPECT_TRUE(x.stats().clocks_aligned);
  }
  ASSERT_GT(c[0].ops().size(), 60'000u);
  ExpectSameTraces(c[0], c[1]);
  EXPECT_LT(c[1].record_bytes() * 2, c[0].record_bytes());  // packed: under half
  const uint64_t span = c[0].window_end() - c[0].window_begin();
  for (CompactTrace& x : c)
    x.RestrictWindow(x.window_begin() + span / 4, x.window_end() - span / 3);
  ExpectSameTraces(c[0], c[1]);
  for (CompactTrace& x : c) x.RestrictToActiveRegion();
  ExpectSameTraces(c[0], c[1]);
  const std::string nvtx(c[0].String(c[0].nvtx().at(0).name_id));
  for (CompactTrace& x : c) ASSERT_TRUE(x.RestrictToNvtx(nvtx).ok());
  ASSERT_GT(c[0].ops().size(), 0u);
  ExpectSameTraces(c[0], c[1]);
}

// Packed, the calls' table by correlation id is built from the host threads merged by id:
// three threads taking ids in turn (with gaps), ids one thread repeats from another (the
// later call wins), ops on two streams. Both forms give every op the same call; so they do
// when one thread's ids fall (the packed form then builds the table as the arrays do).
model::Trace Threads(bool falling) {
  model::Trace t;
  std::mt19937_64 rng(falling ? 3 : 4);
  const uint32_t launch = t.strings.Intern("cudaLaunchKernel"), k = t.strings.Intern("k");
  uint32_t corr = 10;
  uint64_t now = 1'000'000;
  for (uint32_t i = 0; i < 30'000; ++i) {
    corr += 1 + uint32_t(rng() % 3);
    const uint32_t tid = 1 + uint32_t(rng() % 3);
    auto api = [&](uint32_t thread, uint32_t id, uint64_t at) {
      model::ApiEvent a{};
      a.start_ns = at, a.end_ns = at + 500, a.correlation_id = id;
      a.pid = 100, a.tid = thread, a.name_id = launch;
      t.Rows<model::ApiEvent>().push_back(a);
    };
    api(tid, falling && i == 20'000 ? corr - 50 : corr, now);
    if (i % 997 == 5) api(1 + tid % 3, corr, now + 100);  // the same id on another thread
    model::KernelEvent e{};
    e.start_ns = now + 5'000, e.end_ns = now + 9'000, e.pid = 100, e.device_id = 0;
    e.stream_id = 7 + uint32_t(rng() % 2), e.demangled_id = k, e.correlation_id = corr;
    t.Rows<model::KernelEvent>().push_back(e);
    now += 700 + rng() % 300;
  }
  return t;
}

TEST(RecordStore, CallsByIdFromThreadsMergedByIdAreTheArraysOnes) {
  for (bool falling : {false, true}) {
    SCOPED_TRACE(falling ? "ids falling on a thread" : "ids rising on every thread");
    const model::Trace t = Threads(falling);
    CompactTrace c[2];
    for (RecordForm form : {RecordForm::kArrays, RecordForm::kPacked}) {
      c[int(form)].SetRecordForm(form);
      c[int(form)].IngestAll(t);
      c[int(form)].Finalize();
    }
    ExpectSameTraces(c[0], c[1]);
    size_t issued = 0;
    for (uint32_t i = 0; i < c[1].ops().size(); ++i) issued += c[1].CallOfOp(i) != kNone;
    EXPECT_EQ(issued, c[1].ops().size() - (falling ? 1 : 0));  // its call took another id
  }
}

// The op of each call (IndexColumn) of a thread launching onto 8 streams: 8 runs of op
// indexes far apart (each stream's ops), advancing slowly and interleaved, with calls that
// issued nothing (kNone) among them, in runs and alone. Both forms give the same values; the
// packed one stays under 2 bytes a value (one frame of reference over 8 runs 10 M apart would
// take 27 bits a value, and many nones in a block 32).
TEST(IndexColumn, PackedAndPlainHoldTheSameValuesNoneIncluded) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> values;
  uint32_t next[8];
  for (uint32_t s = 0; s < 8; ++s) next[s] = 10'000'000 * s + uint32_t(rng() % 1000);
  for (size_t i = 0; i < 2'000'000; ++i) {
    const bool none = i < 300 || (i / 1'000) % 3 != 0 ? rng() % 4 != 0 : rng() % 3 == 0;
    values.push_back(none ? kNone : (next[rng() % 8] += 1 + uint32_t(rng() % 3)));
  }
  values.back() = kNone;
  IndexColumn column[2];
  for (bool packed : {false, true}) {
    column[packed].Reset(packed, values.size());
    for (uint32_t v : values) column[packed].Append(v);
  }
  for (IndexColumn& c : column) {
    ASSERT_EQ(c.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(c[i], values[i]) << i;
    for (size_t i = values.size(); i-- > 0;) ASSERT_EQ(c[i], values[i]) << i;  // backwards
    for (int k = 0; k < 10'000; ++k) {                                         // at random
      const size_t i = rng() % values.size();
      ASSERT_EQ(c[i], values[i]) << i;
    }
  }
  EXPECT_LT(column[1].bytes() * 2, column[0].bytes());  // packed: under 2 bytes a value
}

}  // namespace
}  // namespace tracesmith::analysis
