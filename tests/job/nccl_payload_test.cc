// Collectives sized by NCCL's own NVTX payloads (job/collectives.h "Bytes,
// communicator, group") on synthetic jobs that carry them as NCCL 2.25+
// writes them: bytes in nccl-tests' sense, communicator, group and rank; a
// `bytes=` range name wins; without payloads nothing says a size.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include "testing/synthetic_job_files.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/job/job_report.h"
#include "tracesmith/model/synthetic_job.h"

namespace tracesmith::analysis {
namespace {

using model::SyntheticCollective;
using model::SyntheticJob;
using model::SyntheticJobOptions;
using testing::WriteRanks;

// A synthetic job whose NCCL calls carry NCCL's payloads.
SyntheticJobOptions PayloadJob(uint32_t ranks, uint32_t steps) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(ranks, 2);
  o.steps = steps;
  o.nccl_payloads = true;
  return o;
}

// The schedule's sizes (nccl-tests' sense), by operation name.
std::map<std::string, uint64_t> SizesOf(const SyntheticJobOptions& o, uint64_t divide = 1) {
  std::map<std::string, uint64_t> out;
  for (const SyntheticCollective& sc : o.schedule) out[sc.op] = sc.bytes / divide;
  return out;
}

// The job report of synthetic job `o`, its rank files written to `dir`.
StatusOr<JobReport> ReportOf(const SyntheticJobOptions& o, const testing::TempDir& dir) {
  return AnalyzeJob(WriteRanks(SyntheticJob(o), dir), {});
}

// One rank's trace written to `dir` and reduced to its collectives.
StatusOr<ProcessCollectives> CollectivesOf(const model::Trace& t, const testing::TempDir& dir) {
  const std::string path = dir / "rank.sbt";
  RETURN_IF_ERROR(format::WriteTraceFile(t, path));
  ASSIGN_OR_RETURN(auto s, SummarizeFile(path));
  return s.front().collectives;
}

// NCCL's own ranges with their payloads (as NCCL 2.19+ writes them), no
// "bytes=" convention: every collective's bytes in nccl-tests' sense (the
// per-rank size of all-gather and reduce-scatter times the group), its
// communicator and the rank's place in it, and bandwidth from them.
TEST(JobReport, NcclPayloadsGiveBytesCommunicatorAndGroup) {
  SyntheticJobOptions o = PayloadJob(4, 3);
  o.schedule[1].generic = true;  // the all-gather: its operation from NCCL's range
  const SyntheticJob job(o);
  testing::TempDir dir;
  const auto files = WriteRanks(job, dir);
  auto s = SummarizeFile(files[1]);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const ProcessCollectives& c = s->front().collectives;
  ASSERT_EQ(c.ops.size(), 9u);
  EXPECT_EQ(c.with_payload, 9u);
  EXPECT_EQ(c.with_bytes, 9u);
  std::map<std::string, uint64_t> bytes_of = SizesOf(o);
  ASSERT_EQ(bytes_of.size(), 3u);
  for (const RankCollective& rc : c.ops) {
    SCOPED_TRACE(CollectiveOpName(rc.op));
    EXPECT_EQ(rc.group_size, 4u);
    EXPECT_EQ(rc.group_rank, 1);
    EXPECT_EQ(rc.bytes, bytes_of[CollectiveOpName(rc.op)]);
  }
  EXPECT_EQ(c.ops[1].op, CollectiveOp::kAllGather);  // comm 0: all-reduce, all-gather, ...
  EXPECT_EQ(c.ops[1].source, OpSource::kNvtxRange);
  // Communicator 0 carries the all-reduce and all-gather, 1 the reduce-scatter.
  for (const RankCollective& rc : c.ops) EXPECT_EQ(rc.comm_hash, 1000u + rc.comm);

  auto report = AnalyzeJob(files, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->bandwidth.size(), 3u);
  for (const BandwidthRow& b : report->bandwidth) {
    EXPECT_EQ(b.ranks, 4u);
    EXPECT_EQ(b.count, 3u);
    EXPECT_GT(b.busbw_gbps, 0);
  }
  // The communicators are NCCL's ids, said in the report.
  EXPECT_EQ(report->comm_ids, (std::vector<uint64_t>{1000, 1001}));
  EXPECT_EQ(report->matched_per_comm, (std::vector<uint32_t>{6, 3}));
  std::ostringstream text;
  WriteJobText(*report, text);
  EXPECT_NE(text.str().find("#0 (NCCL id 1000): 6 matched, #1 (NCCL id 1001): 3 matched"),
            std::string::npos)
      << text.str();
}

// Without payloads or "bytes=" ranges nothing says a size: no bandwidth.
TEST(JobReport, NcclRangesWithoutPayloadsGiveNoBytes) {
  const SyntheticJob job(PayloadJob(2, 2));
  testing::TempDir dir;
  model::Trace t = job.RankTrace(0);
  t.Rows<model::NvtxPayloadEvent>().clear();
  auto c = CollectivesOf(t, dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->with_payload, 0u);
  EXPECT_EQ(c->with_bytes, 0u);
  for (const RankCollective& rc : c->ops) {
    EXPECT_EQ(rc.bytes, 0u);
    EXPECT_EQ(rc.group_size, 0u);
  }
}

// A `bytes=` range around NCCL's call is the program's word: it wins over
// the payload (here it says half the size), and the payload still gives the
// communicator and the group.
TEST(JobReport, ABytesRangeWinsOverThePayload) {
  const SyntheticJobOptions o = PayloadJob(2, 1);
  const SyntheticJob job(o);
  testing::TempDir dir;
  model::Trace t = job.RankTrace(0);
  // Each NCCL range gets an outer "grad_sync bytes=<half>" range starting with it.
  const std::map<std::string, uint64_t> half = SizesOf(o, 2);
  std::vector<model::NvtxRangeEvent> outer;
  for (const model::NvtxRangeEvent& r : t.Rows<model::NvtxRangeEvent>()) {
    const std::string_view name = t.strings.Get(r.name_id);
    const CollectiveOp op = CollectiveOpFromRangeName(name);
    if (!name.starts_with("nccl") || op == CollectiveOp::kUnknown) continue;
    model::NvtxRangeEvent g = r;
    g.start_ns -= 1;  // starts just before, ends with it: encloses the launch
    g.depth = 1;
    g.name_id =
        t.strings.Intern("grad_sync bytes=" + std::to_string(half.at(CollectiveOpName(op))));
    outer.push_back(g);
  }
  for (const auto& g : outer) t.Rows<model::NvtxRangeEvent>().push_back(g);
  auto c = CollectivesOf(t, dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->ops.size(), 3u);
  EXPECT_EQ(c->with_payload, 0u);  // every size from the names
  for (const RankCollective& rc : c->ops) {
    EXPECT_EQ(rc.bytes, half.at(CollectiveOpName(rc.op))) << CollectiveOpName(rc.op);
    EXPECT_EQ(rc.group_size, 2u);
    EXPECT_EQ(rc.comm_hash, 1000u + rc.comm);
  }
}

// A stall inside NCCL's push (CUPTI's buffer request) can stamp the payload
// well before the range's own start: it still belongs to that range, the
// nearest after the lane's previous range started.
TEST(JobReport, APayloadStampedLongBeforeItsRangeStillBelongsToIt) {
  const SyntheticJobOptions o = PayloadJob(2, 2);
  const SyntheticJob job(o);
  testing::TempDir dir;
  model::Trace t = job.RankTrace(1);
  for (model::NvtxPayloadEvent& p : t.Rows<model::NvtxPayloadEvent>())
    if (t.strings.Get(p.text_id).find("Message size") != std::string_view::npos)
      p.ts_ns -= 50'000;  // 50 us early: past kPayloadSlackNs
  auto c = CollectivesOf(t, dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->ops.size(), 6u);
  EXPECT_EQ(c->with_payload, 6u);
  const std::map<std::string, uint64_t> want = SizesOf(o);
  for (const RankCollective& rc : c->ops)
    EXPECT_EQ(rc.bytes, want.at(CollectiveOpName(rc.op))) << CollectiveOpName(rc.op);
}

// NCCL's grouped calls (ncclGroupStart; calls; ncclGroupEnd: torch's
// coalesced all-reduces) enqueue in the calls and launch one kernel in
// ncclGroupEnd, whose range has no payload: the kernel takes the group's
// calls' payloads of its operation, summed, when they name one communicator.
// `comms`: the communicator of each of the two grouped all-reduces.
model::Trace GroupedAllReduce(const SyntheticJob& job, uint64_t first_bytes, uint64_t second_bytes,
                              std::pair<uint64_t, uint64_t> comms) {
  model::Trace t = job.RankTrace(0);
  auto& ranges = t.Rows<model::NvtxRangeEvent>();
  auto& payloads = t.Rows<model::NvtxPayloadEvent>();
  const uint32_t group_end = t.strings.Intern("ncclGroupEnd");
  std::vector<model::NvtxRangeEvent> added;
  for (model::NvtxRangeEvent& r : ranges) {
    if (t.strings.Get(r.name_id) != "ncclAllReduce") continue;
    // The call's own payload goes with it: the group's calls carry theirs.
    std::erase_if(payloads,
                  [&](const model::NvtxPayloadEvent& p) { return p.ts_ns == r.start_ns + 100; });
    r.name_id = group_end;
    const uint64_t s = r.start_ns;
    auto range = [&](uint64_t from, uint64_t to, std::string_view name) {
      model::NvtxRangeEvent g = r;
      g.start_ns = from;
      g.end_ns = to;
      g.range_id += 10'000 + added.size();
      g.name_id = t.strings.Intern(name);
      added.push_back(g);
    };
    auto payload = [&](uint64_t at, uint64_t comm, uint64_t bytes) {
      model::NvtxPayloadEvent p = payloads.front();
      p.ts_ns = at;
      p.text_id = t.strings.Intern("NCCL communicator ID=" + std::to_string(comm) +
                                   "; Message size [bytes]=" + std::to_string(bytes) +
                                   "; Reduction operation=Sum");
      payloads.push_back(p);
    };
    range(s - 900, s - 880, "ncclGroupStart");
    range(s - 800, s - 600, "ncclAllReduce");
    payload(s - 790, comms.first, first_bytes);
    range(s - 500, s - 350, "ncclAllReduce");
    payload(s - 490, comms.second, second_bytes);
  }
  for (const auto& g : added) ranges.push_back(g);
  return t;
}

TEST(JobReport, AKernelOfAGroupTakesItsCallsPayloadsSummed) {
  const SyntheticJob job(PayloadJob(2, 2));
  testing::TempDir dir;
  auto c = CollectivesOf(GroupedAllReduce(job, 1 << 20, 2 << 20, {1000, 1000}), dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->ops.size(), 6u);
  EXPECT_EQ(c->with_payload, 6u);
  uint32_t all_reduces = 0;
  for (const RankCollective& rc : c->ops) {
    if (rc.op != CollectiveOp::kAllReduce) continue;
    ++all_reduces;
    EXPECT_EQ(rc.bytes, uint64_t(3) << 20);  // 1 MiB + 2 MiB in one kernel
    EXPECT_EQ(rc.comm_hash, 1000u);
    EXPECT_EQ(rc.group_size, 2u);
  }
  EXPECT_EQ(all_reduces, 2u);
}

// A group over two communicators does not say which calls its kernel ran:
// no size rather than a wrong one.
TEST(JobReport, AGroupOverTwoCommunicatorsGivesItsKernelNoSize) {
  const SyntheticJob job(PayloadJob(2, 1));
  testing::TempDir dir;
  auto c = CollectivesOf(GroupedAllReduce(job, 1 << 20, 2 << 20, {1000, 1001}), dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->ops.size(), 3u);
  EXPECT_EQ(c->with_payload, 2u);
  for (const RankCollective& rc : c->ops) {
    if (rc.op != CollectiveOp::kAllReduce) continue;
    EXPECT_EQ(rc.bytes, 0u);
  }
}

// nccl-tests times a size over a loop of collectives queued back to back:
// each one's time then holds the GPU's gap before it. The bandwidth rows
// give that figure beside the transfer time, over the collectives that
// followed the one before on their communicator (each rank's kernel started
// within kBackToBackGapNs of that one's end): here 3 us after it on every
// rank (the synthetic launch gap).
TEST(JobReport, BackToBackCollectivesTimedAsNcclTestsTimesThem) {
  constexpr uint64_t kSmall = 1 << 20, kLarge = 16 << 20;
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 4);
  o.steps = 6;
  o.nccl_payloads = true;
  // Per step: three small all-reduces (the first after the step's compute,
  // the two after it queued behind it), then a large one behind them.
  o.schedule = {{.op = "all_reduce", .bytes = kSmall},
                {.op = "all_reduce", .bytes = kSmall},
                {.op = "all_reduce", .bytes = kSmall},
                {.op = "all_reduce", .bytes = kLarge}};
  testing::TempDir dir;
  auto report = ReportOf(o, dir);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->bandwidth.size(), 2u);
  for (const BandwidthRow& b : report->bandwidth) {
    SCOPED_TRACE(b.bytes);
    const bool small = b.bytes == kSmall;
    EXPECT_EQ(b.count, (small ? 3u : 1u) * o.steps);
    EXPECT_EQ(b.back_to_back, (small ? 2u : 1u) * o.steps);
    // Synthetic transfer: 15 us + bytes / 40 GB/s after the last arrival,
    // plus each rank's tail of up to 0.5 us; back to back, the 3-us gap too.
    const double transfer = 15'000 + double(b.bytes) / 40;
    EXPECT_NEAR(double(b.median_ns), transfer + 250, 300);
    EXPECT_NEAR(double(b.back_to_back_mean_ns), 3'000 + transfer + 250, 500);
    EXPECT_NEAR(b.back_to_back_busbw_gbps,
                double(b.bytes) / double(b.back_to_back_mean_ns) * 2 * 3 / 4, 1e-9);
    EXPECT_LT(b.back_to_back_busbw_gbps, b.busbw_gbps);
  }
  uint32_t first_of_step = 0;
  for (const JobCollective& c : report->collectives) first_of_step += c.back_to_back_ns == 0;
  EXPECT_EQ(first_of_step, o.steps);
  std::ostringstream text, json;
  WriteJobText(*report, text);
  for (const BandwidthRow& b : report->bandwidth)  // each row's mean in its column
    EXPECT_NE(text.str().find(StrFormat(" %13u %12s ", b.back_to_back,
                                        HumanDuration(b.back_to_back_mean_ns).c_str())),
              std::string::npos)
        << text.str();
  WriteJobJson(*report, json);
  EXPECT_NE(json.str().find("\"back_to_back\": 12"), std::string::npos) << json.str();

  // One rank 20 us late at every collective after the step's first (its
  // launches wait on its host): none followed the one before within the gap
  // on every rank, so no row has the figure, and the JSON says null.
  o.ranks[2].delay_between_collectives_ns = 20'000;
  testing::TempDir dir2;
  report = ReportOf(o, dir2);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  for (const BandwidthRow& b : report->bandwidth) {
    EXPECT_EQ(b.back_to_back, 0u) << b.bytes;
    EXPECT_EQ(b.back_to_back_mean_ns, 0u);
  }
  for (const JobCollective& c : report->collectives) EXPECT_EQ(c.back_to_back_ns, 0u);
  std::ostringstream json2;
  WriteJobJson(*report, json2);
  EXPECT_NE(json2.str().find("\"back_to_back_busbw_gbps\": null"), std::string::npos);
}

// A collective whose kernel starts before the one before it ends (a
// communicator on two streams) is not back to back: end minus end would be
// shorter than the collective itself. Here the second small all-reduce of
// each step starts 1 us before the first ends, on every rank.
TEST(JobReport, ACollectiveOverlappingTheOneBeforeIsNotBackToBack) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 4);
  o.steps = 5;
  o.nccl_payloads = true;
  o.schedule = {{.op = "all_reduce", .bytes = 1 << 20},
                {.op = "all_reduce", .bytes = 1 << 20},
                {.op = "all_reduce", .bytes = 1 << 20}};
  const SyntheticJob job(o);
  testing::TempDir dir;
  std::vector<std::string> files;
  for (uint32_t r = 0; r < o.ranks.size(); ++r) {
    model::Trace t = job.RankTrace(r);
    std::vector<model::KernelEvent*> comm;  // the communicator's kernels, in time order
    for (model::KernelEvent& k : t.Rows<model::KernelEvent>())
      if (t.strings.Get(k.name_id).starts_with("ncclDevKernel")) comm.push_back(&k);
    ASSERT_EQ(comm.size(), 3u * o.steps);
    std::sort(comm.begin(), comm.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
    for (size_t i = 1; i < comm.size(); i += 3) comm[i]->start_ns = comm[i - 1]->end_ns - 1'000;
    files.push_back(dir / ("run.rank" + std::to_string(r) + ".sbt"));
    ASSERT_TRUE(format::WriteTraceFile(t, files.back()).ok());
  }
  auto report = AnalyzeJob(files, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->collectives.size(), 3u * o.steps);
  for (size_t i = 0; i < report->collectives.size(); ++i)
    EXPECT_EQ(report->collectives[i].back_to_back_ns > 0, i % 3 == 2) << i;
  ASSERT_EQ(report->bandwidth.size(), 1u);
  EXPECT_EQ(report->bandwidth[0].back_to_back, o.steps);
}

// gloo/MPI collectives run on the host one after another: however close,
// they are not a GPU queue's loop, so none has a back-to-back time (here
// each starts 3 us after the one before ends, as the NCCL kernels above).
TEST(JobReport, HostCollectivesAreNeverBackToBack) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(3, 3);
  o.steps = 4;
  for (SyntheticCollective& c : o.schedule) c.host_only = true;
  testing::TempDir dir;
  auto report = ReportOf(o, dir);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->collectives.size(), 4 * o.schedule.size());
  ASSERT_FALSE(report->bandwidth.empty());
  for (const JobCollective& c : report->collectives) EXPECT_EQ(c.back_to_back_ns, 0u);
  for (const BandwidthRow& b : report->bandwidth) EXPECT_EQ(b.back_to_back, 0u) << b.bytes;
}

}  // namespace
}  // namespace tracesmith::analysis
