// The cross-rank analysis on synthetic jobs with known clocks, schedules and
// stragglers: recovered offsets inside their stated bounds, the injected
// straggler found with its delay, exact matching, and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "testing/synthetic_job_files.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/job/job_report.h"
#include "tracesmith/model/synthetic_job.h"

namespace tracesmith::analysis {
namespace {

using model::SyntheticCollective;
using model::SyntheticJob;
using model::SyntheticJobOptions;

// Writes one SBT file per rank; returns their paths in rank order.
using testing::WriteRanks;

bool Contains(const std::vector<std::string>& v, const std::string& what) {
  for (const std::string& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

// At true instants across the run, rank r's and the reference rank's
// capture times, put on the job clock, differ from the truth (they are the
// same instant) by at most the pair's stated bound. The job base itself is
// the reference host's clock as its anchors read it, so the comparison is
// between ranks: the true offset lies inside the stated interval.
void ExpectTruthInsideBound(const SyntheticJob& job, const JobReport& report, uint32_t r,
                            uint32_t ref = 0) {
  const RankReport &rr = report.ranks[r], &r0 = report.ranks[ref];
  ASSERT_TRUE(rr.clock.aligned()) << rr.label;
  const uint64_t bound = PairBound(rr.clock, r0.clock);
  for (uint64_t dt : {0ull, 10'000'000ull, 60'000'000ull}) {
    const uint64_t t = job.options().t0_ns + dt;
    const int64_t err = int64_t(rr.clock.ToJob(job.CaptureNs(r, t))) -
                        int64_t(r0.clock.ToJob(job.CaptureNs(ref, t)));
    EXPECT_LE(uint64_t(std::llabs(err)), bound)
        << rr.label << " at +" << dt << " ns: error " << err << " ns, bound " << bound;
  }
}

TEST(JobClock, SameHostIsExactToTheReadWindowAndOtherHostsAreRefined) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(8, 4);
  o.steps = 12;
  const SyntheticJob job(o);
  testing::TempDir dir;
  const auto files = WriteRanks(job, dir);
  auto report = AnalyzeJob(files, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->ranks.size(), 8u);
  for (uint32_t r = 0; r < 8; ++r) {
    const RankReport& rr = report->ranks[r];
    EXPECT_EQ(rr.rank, int32_t(r));
    ExpectTruthInsideBound(job, *report, r);
    if (r < 4) {
      EXPECT_EQ(rr.clock.method, ClockMethod::kSameHost);
      EXPECT_LE(rr.clock.bound_ns, 1'000u);  // half the read window (<= 1 us here)
    } else {
      // Realtime alone would be +-1 ms; the collectives narrow it to about
      // a collective's transfer time.
      EXPECT_EQ(rr.clock.method, ClockMethod::kRealtimeRefined);
      EXPECT_LT(rr.clock.bound_ns, 400'000u) << rr.label;
    }
    // Drift from two anchors a run apart: each read is within half its window.
    EXPECT_NEAR(rr.clock.drift_ppm, o.ranks[r].drift_ppm, 1e6 * 1000.0 / double(rr.wall_ns));
  }
  // Exact matching: 2 collectives per step on communicator 0, 1 on 1.
  EXPECT_EQ(report->matched_per_comm, (std::vector<uint32_t>{24, 12}));
  EXPECT_EQ(report->collectives.size(), 36u);
  EXPECT_TRUE(report->warnings.empty()) << report->warnings[0];
  EXPECT_EQ(report->collectives[0].op, CollectiveOp::kAllReduce);
  EXPECT_EQ(report->collectives[0].bytes, 8u << 20);
}

TEST(JobClock, WithoutRefinementTheNtpBoundIsStated) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 2);
  o.steps = 4;
  const SyntheticJob job(o);
  testing::TempDir dir;
  JobOptions opt;
  opt.clock.refine_with_collectives = false;
  opt.clock.ntp_bound_ns = 500'000;
  auto report = AnalyzeJob(WriteRanks(job, dir), opt);
  ASSERT_TRUE(report.ok());
  for (uint32_t r = 2; r < 4; ++r) {
    EXPECT_EQ(report->ranks[r].clock.method, ClockMethod::kRealtime);
    EXPECT_GE(report->ranks[r].clock.bound_ns, 500'000u);
    ExpectTruthInsideBound(job, *report, r);
  }
}

TEST(JobClock, AnNtpBoundTooSmallIsCaughtByTheCollectives) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 2);
  o.steps = 4;
  o.hosts[1].realtime_error_ns = 900'000;  // 0.9 ms off, but the bound says 0.1 ms
  const SyntheticJob job(o);
  testing::TempDir dir;
  JobOptions opt;
  opt.clock.ntp_bound_ns = 100'000;
  auto report = AnalyzeJob(WriteRanks(job, dir), opt);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(Contains(report->warnings, "contradict the assumed NTP bound"));
  EXPECT_EQ(report->ranks[3].clock.method, ClockMethod::kRealtime);
}

TEST(JobClock, OldAnchorsGetTheDefaultWindowAndSaySo) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 3;
  o.ranks[1].old_anchors = true;
  const SyntheticJob job(o);
  testing::TempDir dir;
  auto report = AnalyzeJob(WriteRanks(job, dir), {});
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->ranks[0].clock.default_window);
  EXPECT_TRUE(report->ranks[1].clock.default_window);
  EXPECT_GE(report->ranks[1].clock.bound_ns, 5'000u);  // half of the 10 us default
  ExpectTruthInsideBound(job, *report, 1);
  std::ostringstream text;
  WriteJobText(*report, text);
  EXPECT_NE(text.str().find("old file: assumed window"), std::string::npos);
}

TEST(JobReport, FindsTheInjectedStragglerWithItsDelay) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(8, 4);
  o.steps = 20;
  o.ranks[5].delay_per_step_ns = 300'000;  // 0.3 ms every step
  const SyntheticJob job(o);
  testing::TempDir dir;
  auto report = AnalyzeJob(WriteRanks(job, dir), {});
  ASSERT_TRUE(report.ok());
  ASSERT_FALSE(report->stragglers.empty());
  const Straggler& s = report->stragglers[0];
  EXPECT_EQ(report->ranks[s.rank_index].rank, 5);
  // Last at the first collective of every step (the later ones start together).
  EXPECT_GE(s.last_count, 20u);
  const int64_t off = int64_t(s.median_late_ns) - 300'000;
  EXPECT_LE(uint64_t(std::llabs(off)), s.bound_ns + o.jitter_ns)
      << "lateness " << s.median_late_ns << " bound " << s.bound_ns;
  EXPECT_TRUE(s.significant());
  ASSERT_FALSE(report->findings.empty());
  EXPECT_NE(report->findings[0].find("rank 5 (node1, pid 1005) arrives last at"), std::string::npos)
      << report->findings[0];
  EXPECT_NE(report->findings[0].find("clock bound ±"), std::string::npos);
  // The others wait for it: about the delay per step.
  EXPECT_GT(report->ranks[0].wait_ns, 20 * 250'000u);
  EXPECT_LT(report->ranks[5].wait_ns, report->ranks[0].wait_ns / 4);
  // Its compute is longer by the delay; its steps are not (the others wait).
  EXPECT_NEAR(double(report->ranks[5].compute_ns - report->ranks[0].compute_ns), 20 * 300'000.0,
              20 * double(o.jitter_ns));
  EXPECT_GT(report->collectives_within_bound, 0u);  // the collectives after the first of a step
  // Bus bandwidth (nccl-tests): all-reduce of 8 MiB over 8 ranks.
  ASSERT_FALSE(report->bandwidth.empty());
  for (const BandwidthRow& b : report->bandwidth) {
    if (b.op != CollectiveOp::kAllReduce) continue;
    EXPECT_EQ(b.bytes, 8u << 20);
    EXPECT_NEAR(b.busbw_gbps, b.algbw_gbps * 2 * 7 / 8, 1e-9);
    // Transfer model: 15 us + bytes / 40 GB/s, plus up to 0.5 us of tail.
    const double expect_ns = 15'000 + double(8 << 20) / 40;
    EXPECT_NEAR(double(b.median_ns), expect_ns, 600 + 2.0 * double(report->max_bound_ns));
  }
}

TEST(JobReport, RankWithoutAnchorsIsLeftOutOfTimesWithAWarning) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 2);
  o.steps = 5;
  o.ranks[2].anchors = false;
  const SyntheticJob job(o);
  testing::TempDir dir;
  auto report = AnalyzeJob(WriteRanks(job, dir), {});
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->ranks[2].clock.aligned());
  EXPECT_TRUE(Contains(report->warnings, "rank 2 (node1, pid 1002): no clock anchors"));
  EXPECT_TRUE(Contains(report->ranks[2].warnings, "no clock anchors"));
  EXPECT_EQ(report->collectives.size(), 15u);
  for (const JobCollective& c : report->collectives) EXPECT_EQ(c.ranks, 3u);
  ExpectTruthInsideBound(job, *report, 3);
}

TEST(JobReport, TruncatedRankFileGivesPartialResultsAndWarnings) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 4);
  o.steps = 40;
  o.compute_kernels = 200;  // enough rows for several chunks
  const SyntheticJob job(o);
  testing::TempDir dir;
  std::vector<std::string> files = WriteRanks(job, dir);
  auto bytes = ReadFileToString(files[3]);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(WriteStringToFile(files[3], bytes->substr(0, bytes->size() / 2)).ok());
  auto report = AnalyzeJob(files, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->ranks.size(), 4u);
  EXPECT_TRUE(Contains(report->ranks[3].warnings, "damaged")) << report->ranks[3].warnings.size();
  EXPECT_GT(report->collectives.size(), 0u);
  for (uint32_t r = 1; r < 4; ++r) ExpectTruthInsideBound(job, *report, r);
}

TEST(JobReport, MismatchedCollectiveCountsGiveTheMatchedPrefix) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 2);
  o.steps = 10;
  const SyntheticJob job(o);
  testing::TempDir dir;
  std::vector<std::string> files = WriteRanks(job, dir);
  // Rank 2 lost its last two NCCL kernels (a capture stopped early).
  model::Trace t = job.RankTrace(2);
  auto& k = t.Rows<model::KernelEvent>();
  for (int dropped = 0; dropped < 2;)
    for (size_t i = k.size(); i-- > 0;)
      if (t.strings.Get(k[i].name_id).starts_with("nccl")) {
        k.erase(k.begin() + ptrdiff_t(i));
        ++dropped;
        break;
      }
  ASSERT_TRUE(format::WriteTraceFile(t, files[2]).ok());
  auto report = AnalyzeJob(files, {});
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(Contains(report->warnings,
                       "rank 0 (node0, pid 1000): 20, rank 1 (node0, pid 1001): 20, "
                       "rank 2 (node1, pid 1002): 19"));
  EXPECT_TRUE(Contains(report->warnings, "matched the first 19"));
  EXPECT_EQ(report->matched_per_comm, (std::vector<uint32_t>{19, 9}));
  // What was matched is right: every matched collective of a step starts together.
  for (const JobCollective& c : report->collectives) EXPECT_LT(c.skew_ns, 100'000u);
}

TEST(JobClock, OneAnchorGivesAnOffsetWithTheAssumedDrift) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 10;
  o.ranks[1].drift_ppm = 20;
  const SyntheticJob job(o);
  testing::TempDir dir;
  std::vector<std::string> files = WriteRanks(job, dir);
  model::Trace t = job.RankTrace(1);
  t.Rows<model::ClockAnchor>().pop_back();  // the end anchor: lost with a cut file
  ASSERT_TRUE(format::WriteTraceFile(t, files[1]).ok());
  auto report = AnalyzeJob(files, {});
  ASSERT_TRUE(report.ok());
  const ProcessClock& c = report->ranks[1].clock;
  EXPECT_EQ(c.anchors, 1u);
  // 50 ppm over the run (about 50 ms): 2.5 us more than the read window.
  EXPECT_GT(c.bound_ns, 2'000u);
  ExpectTruthInsideBound(job, *report, 1);
}

TEST(JobReport, UnreadableFileIsLeftOutWithItsReason) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 3;
  const SyntheticJob job(o);
  testing::TempDir dir;
  std::vector<std::string> files = WriteRanks(job, dir);
  files.push_back(dir / "missing.sbt");
  auto report = AnalyzeJob(files, {});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ranks.size(), 2u);
  EXPECT_TRUE(Contains(report->warnings, "missing.sbt"));
  EXPECT_FALSE(AnalyzeJob(std::vector<std::string>{dir / "missing.sbt"}, {}).ok());
}

TEST(JobReport, MergedFileGivesTheSameAnswerAsPerRankFiles) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 2);
  o.steps = 6;
  o.ranks[1].delay_per_step_ns = 200'000;
  const SyntheticJob job(o);
  testing::TempDir dir;
  model::Trace merged;
  for (uint32_t r = 0; r < 4; ++r) job.AppendRankTrace(r, &merged);
  ASSERT_TRUE(format::WriteTraceFile(merged, dir / "job.sbt").ok());
  auto one = AnalyzeJob(std::vector<std::string>{dir / "job.sbt"}, {});
  auto many = AnalyzeJob(WriteRanks(job, dir), {});
  ASSERT_TRUE(one.ok() && many.ok());
  ASSERT_EQ(one->ranks.size(), 4u);
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(one->ranks[r].clock.offset_ns, many->ranks[r].clock.offset_ns);
    EXPECT_EQ(one->ranks[r].clock.bound_ns, many->ranks[r].clock.bound_ns);
    EXPECT_EQ(one->ranks[r].wait_ns, many->ranks[r].wait_ns);
    EXPECT_EQ(one->ranks[r].compute_ns, many->ranks[r].compute_ns);
  }
  EXPECT_EQ(one->collectives.size(), many->collectives.size());
  EXPECT_EQ(one->ranks[one->stragglers[0].rank_index].rank, 1);
}

TEST(JobReport, GenericKernelsTakeTheirOperationFromNvtx) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 3;
  o.schedule[1].generic = true;  // the all-gather
  const SyntheticJob job(o);
  testing::TempDir dir;
  auto s = SummarizeFile(WriteRanks(job, dir)[0]);
  ASSERT_TRUE(s.ok());
  const ProcessCollectives& c = s->front().collectives;
  EXPECT_EQ(c.generic_kernels, 3u);
  EXPECT_EQ(c.generic_resolved, 3u);
  EXPECT_EQ(c.ops[1].op, CollectiveOp::kAllGather);
  EXPECT_EQ(c.ops[1].source, OpSource::kNvtxRange);
  EXPECT_EQ(c.ops[1].bytes, 2u << 20);
}

// Only the first collective of a step has a last rank (the others start
// together): the straggler is judged against its share of those, so 4
// ranks with a straggler last at every step's first collective is named.
TEST(JobReport, StragglerFindingCountsOnlyCollectivesWithALastRank) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 2);
  o.steps = 10;
  o.ranks[3].delay_per_step_ns = 500'000;
  const SyntheticJob job(o);
  testing::TempDir dir;
  auto report = AnalyzeJob(WriteRanks(job, dir), {});
  ASSERT_TRUE(report.ok());
  ASSERT_FALSE(report->findings.empty());
  EXPECT_NE(report->findings[0].find("rank 3 (node1, pid 1003) arrives last at 10 of 30"),
            std::string::npos)
      << report->findings[0];
}

// `o`'s job, written to a temporary directory and analyzed; its first
// straggler must be `rank`.
void AnalyzeWithStraggler(const SyntheticJobOptions& o, int rank, JobReport* report) {
  const SyntheticJob job(o);
  testing::TempDir dir;
  auto analyzed = AnalyzeJob(WriteRanks(job, dir), {});
  ASSERT_TRUE(analyzed.ok()) << analyzed.status().ToString();
  ASSERT_FALSE(analyzed->stragglers.empty());
  ASSERT_EQ(analyzed->ranks[analyzed->stragglers[0].rank_index].rank, rank);
  *report = std::move(*analyzed);
}

// A job whose straggler spends extra host time every step (a data loader)
// before the step's first launch; the host waits for peers inside a
// synchronize (not counted), as a training loop's `loss.item()` does.
SyntheticJobOptions HostStragglerJob(bool stacks) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 4);
  o.steps = 12;
  o.stacks = stacks;
  o.sync_each_step = true;
  o.ranks[2].host_delay_per_step_ns = 1'000'000;  // 1 ms before the step's first launch
  return o;
}

TEST(JobReport, StragglerFindingSaysWhereItsExtraHostTimeGoes) {
  const SyntheticJobOptions o = HostStragglerJob(/*stacks=*/true);
  JobReport report;
  ASSERT_NO_FATAL_FAILURE(AnalyzeWithStraggler(o, 2, &report));
  const Straggler& s = report.stragglers[0];
  ASSERT_TRUE(s.host_excess.has_value());
  const HostExcess& e = *s.host_excess;
  EXPECT_EQ(e.site, "train_step (train.py:31)");
  EXPECT_TRUE(e.stacks);
  EXPECT_EQ(e.others, 3u);
  // Every rank has 1 us between its step's start and its first launch, and
  // 2 us between its last launch and the synchronize that ends the step
  // (time outside CUDA that the next launch, the next step's first, ends);
  // rank 2 has 1 ms more (its capture clock drifts by a few ppm).
  EXPECT_NEAR(double(e.others_ns), 3'000, 100);
  EXPECT_NEAR(double(e.excess_ns), 1'000'000, 100);
  EXPECT_EQ(e.step_ns, report.ranks[s.rank_index].step_median_ns);
  EXPECT_NEAR(e.share(), 1e6 / double(e.step_ns), 1e-4);
  // Steps: 4 ms compute + 1 ms of host delay (the others wait) + collectives.
  EXPECT_GT(e.step_ns, 5'000'000u);
  EXPECT_LT(e.step_ns, 6'000'000u);
  ASSERT_FALSE(report.findings.empty());
  const std::string& f = report.findings[0];
  EXPECT_NE(f.find("rank 2 (node0, pid 1002) arrives last at"), std::string::npos) << f;
  EXPECT_NE(f.find(StrFormat("; its step has %.0f%% more host time before launches from "
                             "`train_step (train.py:31)` than the other ranks' median (+",
                             e.share() * 100)),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("time outside CUDA API calls"), std::string::npos) << f;
  // --json carries the same.
  std::ostringstream json;
  WriteJobJson(report, json);
  EXPECT_NE(json.str().find(R"x("call_site": "train_step (train.py:31)")x"), std::string::npos);
  EXPECT_NE(json.str().find(StrFormat(R"("excess_ns": %llu)", (unsigned long long)e.excess_ns)),
            std::string::npos);
  EXPECT_NE(json.str().find(R"("share_of_step": )"), std::string::npos);
  // The rank's sites: the loader line first (the launches that follow it
  // are 3 us apart: 2 us between calls).
  const HostTime& h = report.ranks[s.rank_index].host_time;
  ASSERT_EQ(h.sites.size(), 3u);
  EXPECT_EQ(h.sites[0].site, "train_step (train.py:31)");
  EXPECT_EQ(h.sites[1].site, "forward (model.py:57)");
  EXPECT_NEAR(double(h.sites[1].step_median_ns), 7 * 2'000, 100);
  EXPECT_FALSE(h.more_sites);
  EXPECT_EQ(h.steps, 11u);                 // the first of 12 is the warm-up
  EXPECT_EQ(report.bandwidth.size(), 3u);  // the ranges still enclose launches made ahead
}

TEST(JobReport, StragglerWithoutAHostCauseGetsNoHostClause) {
  SyntheticJobOptions o = HostStragglerJob(/*stacks=*/true);
  o.ranks[2].host_delay_per_step_ns = 0;
  o.ranks[2].delay_per_step_ns = 1'000'000;  // slower GPU work, same host time
  JobReport report;
  ASSERT_NO_FATAL_FAILURE(AnalyzeWithStraggler(o, 2, &report));
  const Straggler& s = report.stragglers[0];
  EXPECT_TRUE(s.significant());
  EXPECT_FALSE(s.host_excess.has_value()) << s.host_excess->site << " " << s.host_excess->excess_ns;
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].find("host time"), std::string::npos) << report.findings[0];
  std::ostringstream json;
  WriteJobJson(report, json);
  EXPECT_NE(json.str().find(R"("host_time": null)"), std::string::npos);
}

TEST(JobReport, WithoutStacksTheHostClauseNamesNoCallSite) {
  const SyntheticJobOptions o = HostStragglerJob(/*stacks=*/false);
  JobReport report;
  ASSERT_NO_FATAL_FAILURE(AnalyzeWithStraggler(o, 2, &report));
  const Straggler& s = report.stragglers[0];
  ASSERT_TRUE(s.host_excess.has_value());
  EXPECT_TRUE(s.host_excess->site.empty());
  EXPECT_FALSE(s.host_excess->stacks);
  EXPECT_NEAR(double(s.host_excess->excess_ns), 1'000'000, 100);
  EXPECT_TRUE(report.ranks[s.rank_index].host_time.sites.empty());
  const std::string& f = report.findings[0];
  EXPECT_NE(f.find(StrFormat("; its step has %.0f%% more host time before its launches than the "
                             "other ranks' median",
                             s.host_excess->share() * 100)),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("no call stacks"), std::string::npos) << f;
  EXPECT_EQ(f.find("launches from"), std::string::npos) << f;
  std::ostringstream json;
  WriteJobJson(report, json);
  EXPECT_NE(json.str().find(R"("call_site": null)"), std::string::npos);
}

// FindHostExcess on hand-made ranks: 10 ms steps, host time per step by site.
RankReport HostRank(uint64_t total_ns, std::vector<HostSiteTime> sites, bool more = false) {
  RankReport r;
  r.step_median_ns = 10'000'000;
  r.host_time = {.steps = 5,
                 .step_median_ns = total_ns,
                 .stacks = true,
                 .sites = std::move(sites),
                 .more_sites = more};
  return r;
}

TEST(JobReport, HostExcessIsMaterialOnlyAboveFivePercentAndTheBound) {
  // Rank 0 has 0.8 ms more at "loader" (8% of its step).
  std::vector<RankReport> ranks = {HostRank(2'000'000, {{"loader", 1'000'000}, {"fwd", 900'000}}),
                                   HostRank(1'100'000, {{"fwd", 900'000}, {"loader", 200'000}}),
                                   HostRank(1'100'000, {{"fwd", 900'000}, {"loader", 200'000}})};
  auto e = FindHostExcess(ranks, 0, 1'000);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->site, "loader");
  EXPECT_EQ(e->excess_ns, 800'000u);
  EXPECT_EQ(e->others_ns, 200'000u);
  EXPECT_DOUBLE_EQ(e->share(), 0.08);
  EXPECT_FALSE(FindHostExcess(ranks, 0, 900'000).has_value());  // within the clock bound
  ranks[0].host_time.sites[0].step_median_ns = 650'000;         // 4.5%: not material
  ranks[0].host_time.step_median_ns = 1'550'000;
  EXPECT_FALSE(FindHostExcess(ranks, 0, 1'000).has_value());
  // A site another rank leaves out of its list counts as at most its smallest listed one.
  ranks[0].host_time.sites[0].step_median_ns = 1'000'000;
  ranks[1].host_time.sites = {{"fwd", 900'000}, {"opt", 700'000}};
  ranks[1].host_time.more_sites = true;
  ranks[2].host_time.sites = ranks[1].host_time.sites;
  ranks[2].host_time.more_sites = true;
  e = FindHostExcess(ranks, 0, 1'000);
  EXPECT_FALSE(e.has_value()) << e->site << " " << e->excess_ns;          // 0.3 ms at most: 3%
  ranks[1].host_time.more_sites = ranks[2].host_time.more_sites = false;  // complete lists: 0
  e = FindHostExcess(ranks, 0, 1'000);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->site, "loader");
  EXPECT_EQ(e->excess_ns, 1'000'000u);
}

TEST(JobReport, HostExcessSpreadOverSitesIsSaidWithoutOne) {
  // 0.3 ms more at each of three sites (3% each), 0.9 ms in all (9%).
  std::vector<RankReport> ranks = {
      HostRank(1'800'000, {{"a", 600'000}, {"b", 600'000}, {"c", 600'000}}),
      HostRank(900'000, {{"a", 300'000}, {"b", 300'000}, {"c", 300'000}}),
      HostRank(900'000, {{"a", 300'000}, {"b", 300'000}, {"c", 300'000}})};
  auto e = FindHostExcess(ranks, 0, 1'000);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->site.empty());
  EXPECT_TRUE(e->stacks);
  EXPECT_EQ(e->excess_ns, 900'000u);
  // Fewer than 2 steady steps on every other rank: not measured.
  ranks[1].host_time.steps = ranks[2].host_time.steps = 1;
  EXPECT_FALSE(FindHostExcess(ranks, 0, 1'000).has_value());
}

// torchrun's agent initialises CUDA (to count devices), so `profile --
// torchrun` captures it too: a process with no rank and no GPU work is left
// out of the job's ranks, and said (seen on the H100, issue #17's GPU check).
TEST(JobReport, ALauncherWithoutRankOrGpuWorkIsLeftOut) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 4;
  const SyntheticJob job(o);
  testing::TempDir dir;
  std::vector<std::string> files = WriteRanks(job, dir);
  files.push_back(dir / "run.sbt");
  ASSERT_TRUE(format::WriteTraceFile(job.LauncherTrace(999), files.back()).ok());
  auto report = AnalyzeJob(files, {});
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->ranks.size(), 2u);
  EXPECT_EQ(report->ranks[0].rank, 0);
  EXPECT_EQ(report->ranks[1].rank, 1);
  ASSERT_EQ(report->left_out.size(), 1u);
  EXPECT_EQ(report->left_out[0], "pid 999 on node0: no rank, no GPU work (a launcher?)");
  EXPECT_EQ(report->matched_per_comm, (std::vector<uint32_t>{8, 4}));
}

// Lateness per step: the sum of a rank's lateness over the collectives that
// arrive in a steady step's span (its begin to the next step's begin).
TEST(JobReport, StepLatenessSumsEachSteadyStepAndTakesTheMedian) {
  // 5 steps of 10 ms (the first is the warm-up); host ranges end at 6 ms.
  std::vector<RankStep> steps;
  for (uint64_t s = 0; s < 5; ++s) steps.push_back({s * 10'000'000, s * 10'000'000 + 6'000'000});
  std::vector<LateArrival> late = {
      {1'000'000, 50'000'000},  // in the warm-up step: left out
      {17'000'000, 15'000},     // step 1, after its host range ends
      {12'000'000, 5'000'000},  // step 1 (arrivals in any order)
      {21'000'000, 5'000'000},  // step 2
      {23'000'000, 600'000},    // step 2
      {41'000'000, 9'000'000},  // step 4, the last: its span is as long as step 3's
      {49'999'999, 1'000},      // step 4, last ns of its span
      {50'000'000, 7'000'000},  // after the last step's span: left out
  };
  uint32_t used = 0;
  // Per step: 5.015 ms, 5.6 ms, 0 (step 3), 9.001 ms; the lower median of 4.
  EXPECT_EQ(StepLateness(steps, late, &used), 5'015'000u);
  EXPECT_EQ(used, 4u);
  // Fewer than 2 steady steps: nothing per step.
  steps.resize(1);
  EXPECT_EQ(StepLateness(steps, late, &used), 0u);
  EXPECT_EQ(used, 0u);
  // 3 steps: no warm-up left out (FirstSteadyStep), steps 0..2.
  steps = {{0, 5}, {10'000'000, 10'000'005}, {20'000'000, 20'000'005}};
  EXPECT_EQ(StepLateness(steps, late, &used), 5'600'000u);  // 50 ms, 5.015 ms, 5.6 ms
  EXPECT_EQ(used, 3u);
}

// DDP's pattern, seen on two H200s: the straggler sleeps before its step's
// first collective (one large lateness per step) and is a little late at
// the step's other collectives too. The median per collective shows the
// small one; the per-step figure shows what the others lose each step.
TEST(JobReport, AStragglerLateOnceAStepIsMeasuredPerStep) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 12;
  o.ranks[1].host_delay_before_collectives_ns = 5'000'000;
  o.ranks[1].delay_between_collectives_ns = 200'000;
  JobReport report;
  ASSERT_NO_FATAL_FAILURE(AnalyzeWithStraggler(o, 1, &report));
  const Straggler& s = report.stragglers[0];
  EXPECT_EQ(s.last_count, 12u * 3);  // 3 collectives a step, last at each
  // Per collective, the median is one of the small ones.
  EXPECT_NEAR(double(s.median_late_ns), 200'000, 30'000);
  // Per step: 5 ms + 2 x 0.2 ms (jitter in compute: 20 us), over 11 steady steps.
  EXPECT_EQ(s.steps, 11u);
  EXPECT_NEAR(double(s.step_late_ns), 5'400'000, 30'000);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_NE(report.findings[0].find(StrFormat("; %s late per step (median of 11 steps)",
                                              HumanDuration(s.step_late_ns).c_str())),
            std::string::npos)
      << report.findings[0];
  std::ostringstream text, json;
  WriteJobText(report, text);
  EXPECT_NE(
      text.str().find(StrFormat("; %s per step (11 steps)", HumanDuration(s.step_late_ns).c_str())),
      std::string::npos)
      << text.str();
  WriteJobJson(report, json);
  EXPECT_NE(json.str().find(StrFormat(R"("step_late_ns": %llu)",
                                      static_cast<unsigned long long>(s.step_late_ns))),
            std::string::npos);
  // The rank that is never late has no per-step lateness.
  EXPECT_EQ(report.ranks[0].step_lateness_ns, 0u);
}

// Review findings (this session): the summary's first event includes NVTX
// ranges (a step range opens before the first call); an importer's rank 0
// without a host is "unknown"; an NCCL stream never pairs with a gloo thread.
TEST(RankSummary, FirstEventIncludesNvtxRanges) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 3;
  const SyntheticJob job(o);
  const model::Trace t = job.RankTrace(0);
  uint64_t first_range = UINT64_MAX;
  for (const auto& n : t.Rows<model::NvtxRangeEvent>())
    first_range = std::min(first_range, n.start_ns);
  testing::TempDir dir;
  auto s = SummarizeFile(WriteRanks(job, dir)[0]);
  ASSERT_TRUE(s.ok());
  EXPECT_LE(s->front().first_ns, first_range);
}

TEST(RankSummary, AnImportersRankZeroWithoutHostIsUnknown) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 3;
  const SyntheticJob job(o);
  model::Trace t = job.RankTrace(1);
  for (model::Process& p : t.Rows<model::Process>()) {
    p.rank = 0;
    p.hostname_id = 0;
  }
  testing::TempDir dir;
  ASSERT_TRUE(format::WriteTraceFile(t, dir / "imported.sbt").ok());
  auto s = SummarizeFile(dir / "imported.sbt");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->front().rank, -1);
}

TEST(Collectives, AnNcclStreamNeverPairsWithAHostThread) {
  std::vector<RankCollective> a(3), b(3);
  for (uint32_t k = 0; k < 3; ++k) {
    a[k] = {.start_ns = 100 * k,
            .end_ns = 100 * k + 50,
            .seq = k,
            .op = CollectiveOp::kAllReduce,
            .source = OpSource::kKernelName};
    b[k] = a[k];
    b[k].source = OpSource::kHostRange;
  }
  const std::vector<RankCollective>* ranks[] = {&a, &b};
  const std::string labels[] = {"rank 0", "rank 1"};
  MatchResult m = MatchCollectives(ranks, labels);
  EXPECT_TRUE(m.matches.empty());
  EXPECT_TRUE(Contains(m.warnings, "an NCCL stream on some ranks and a host (gloo/MPI) thread"));
}

// gloo/MPI: no NCCL kernel; the program's NVTX ranges naming the operation are
// the collectives (from the host's arrival to the end), matched like kernels.
TEST(JobReport, HostCollectivesFromNvtxRangesFindTheStraggler) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(3, 3);
  o.steps = 12;
  for (SyntheticCollective& c : o.schedule) c.host_only = true;
  o.ranks[1].delay_per_step_ns = 2'000'000;  // 2 ms every step
  const SyntheticJob job(o);
  testing::TempDir dir;
  auto report = AnalyzeJob(WriteRanks(job, dir), {});
  ASSERT_TRUE(report.ok());
  // Every scheduled collective of every step, matched on one host communicator
  // per thread (all on one thread here).
  auto s = SummarizeFile(WriteRanks(job, dir)[0]);
  ASSERT_TRUE(s.ok());
  const ProcessCollectives& c = s->front().collectives;
  ASSERT_EQ(c.ops.size(), 12 * o.schedule.size());
  ASSERT_EQ(c.comms.size(), 1u);
  EXPECT_EQ(c.comms[0].device, kHostComm);
  EXPECT_EQ(c.ops[0].source, OpSource::kHostRange);
  EXPECT_EQ(c.ops[0].op, CollectiveOpFromName(o.schedule[0].op));
  EXPECT_EQ(c.ops[0].bytes, o.schedule[0].bytes);
  EXPECT_EQ(report->comms, 1u);
  ASSERT_FALSE(report->stragglers.empty());
  const Straggler& st = report->stragglers[0];
  EXPECT_EQ(report->ranks[st.rank_index].rank, 1);
  EXPECT_GE(st.last_count, 12u);
  EXPECT_LE(uint64_t(std::llabs(int64_t(st.median_late_ns) - 2'000'000)),
            st.bound_ns + o.jitter_ns);
}

// 4 ranks, 12 steps, call stacks, every collective on the host (gloo);
// `sync`: the host launches ahead of the GPU and waits in a synchronize.
SyntheticJobOptions GlooJob(bool sync) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 4);
  o.steps = 12;
  o.stacks = true;
  o.sync_each_step = sync;
  for (SyntheticCollective& c : o.schedule) c.host_only = true;
  return o;
}

// Rank 2's host-time excess in `report`: at the next step's first launch
// ("train_step (train.py:31)"), 1 ms within `tolerance_ns`.
void ExpectHostExcessAtTheLoader(const JobReport& report, double tolerance_ns) {
  const Straggler& s = report.stragglers[0];
  ASSERT_TRUE(s.host_excess.has_value());
  EXPECT_EQ(s.host_excess->site, "train_step (train.py:31)");
  EXPECT_NEAR(double(s.host_excess->excess_ns), 1'000'000, tolerance_ns);
}

// gloo on CUDA tensors: the rank copies its tensor back to the GPU when the
// host collective ends. The fast ranks wait there for the straggler, on the
// host and outside CUDA calls, then launch: that wait is waiting for peers,
// not host work before a launch (seen on the H100: every rank had ~20 ms of
// "host time" at the copy site and the sleeping rank no excess).
TEST(JobReport, WaitingInHostCollectivesIsNotHostTimeBeforeLaunches) {
  SyntheticJobOptions o = GlooJob(/*sync=*/true);  // launches ahead, 3 us apart
  for (SyntheticCollective& c : o.schedule) c.launch_after = true;
  o.ranks[2].host_delay_per_step_ns = 1'000'000;  // 1 ms before the step's first launch
  JobReport report;
  ASSERT_NO_FATAL_FAILURE(AnalyzeWithStraggler(o, 2, &report));
  for (const RankReport& r : report.ranks) {
    // The others' host time is the launches' own 2-3 us gaps, not the ~1 ms
    // they wait for rank 2 in each collective.
    if (r.rank != 2) {
      EXPECT_LT(r.host_time.step_median_ns, 100'000u) << r.label;
      for (const HostSiteTime& site : r.host_time.sites)
        EXPECT_LT(site.step_median_ns, 100'000u) << r.label << " " << site.site;
    }
  }
  ExpectHostExcessAtTheLoader(report, 10'000);
}

// The gloo job on the H200: rank 1 sleeps after its step's synchronize,
// before the all-reduce; the next launch on that thread is the next step's
// first. The sleep is the first step's host time, at that launch's site (it
// was dropped when the time was clipped to the launch's step).
TEST(JobReport, HostTimeAtAStepsEndCountsInThatStep) {
  SyntheticJobOptions o = GlooJob(/*sync=*/true);
  o.ranks[2].host_delay_before_collectives_ns = 1'000'000;
  JobReport report;
  ASSERT_NO_FATAL_FAILURE(AnalyzeWithStraggler(o, 2, &report));
  ExpectHostExcessAtTheLoader(report, 20'000);
  for (const RankReport& r : report.ranks) {
    if (r.rank == 2) continue;
    EXPECT_LT(r.host_time.step_median_ns, 100'000u) << r.label;
  }
}

// The same sleep with no CUDA call after it in its step: the gap from the
// step's last launch to the next step's first launch spans both steps, and
// each counts its part (clipped to the launch's step, the sleep was lost).
TEST(JobReport, AGapOverTwoStepsCountsInEach) {
  SyntheticJobOptions o = GlooJob(/*sync=*/false);  // no call between the launches
  o.ranks[2].host_delay_before_collectives_ns = 1'000'000;
  JobReport report;
  ASSERT_NO_FATAL_FAILURE(AnalyzeWithStraggler(o, 2, &report));
  // The others' jitter in their compute (up to 20 us a step) is in the gap too.
  ExpectHostExcessAtTheLoader(report, 50'000);
}

// A range that launches an NCCL kernel is not a second, host collective.
TEST(Collectives, RangesThatLaunchNcclKernelsAreNotHostCollectives) {
  SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 4;
  const SyntheticJob job(o);
  testing::TempDir dir;
  auto s = SummarizeFile(WriteRanks(job, dir)[0]);
  ASSERT_TRUE(s.ok());
  for (const CommStream& cs : s->front().collectives.comms) EXPECT_NE(cs.device, kHostComm);
  for (const RankCollective& rc : s->front().collectives.ops)
    EXPECT_NE(rc.source, OpSource::kHostRange);
}

TEST(Collectives, RangeNamesOfCpuBackendsAndC10dNameTheOperation) {
  EXPECT_EQ(CollectiveOpFromRangeName("gloo:all_reduce bytes=4096"), CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpFromRangeName("c10d::allreduce_"), CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpFromRangeName("c10d::_allgather_base_"), CollectiveOp::kAllGather);
  EXPECT_EQ(CollectiveOpFromRangeName("mpi:broadcast"), CollectiveOp::kBroadcast);
  EXPECT_EQ(CollectiveOpFromRangeName("ncclAllReduce"), CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpFromRangeName("all_reduce"), CollectiveOp::kUnknown);  // no backend
  EXPECT_EQ(CollectiveOpFromRangeName("forward"), CollectiveOp::kUnknown);
}

}  // namespace
}  // namespace tracesmith::analysis
