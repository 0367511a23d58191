// The Perfetto export of a distributed job, decoded: a process per rank
// named with rank and host, the events on the job clock, and one flow per
// matched collective across the ranks' kernels.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "perfetto_checker.h"
#include "testing/synthetic_job_files.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/job_export.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic_job.h"

namespace tracesmith::exporter {
namespace {

TEST(PerfettoJob, RanksAsProcessesAndCollectivesLinked) {
  model::SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 2);
  o.steps = 5;
  o.compute_kernels = 3;
  o.ranks[3].delay_per_step_ns = 200'000;
  const model::SyntheticJob job(o);
  testing::TempDir dir;
  std::vector<std::string> files = testing::WriteRanks(job, dir);
  auto stats = ExportJobPerfetto(files, dir / "job.pftrace");
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->ranks, 4u);
  EXPECT_EQ(stats->flows, 15u * 4);  // 15 collectives, 4 kernels each
  auto bytes = ReadFileToString(dir / "job.pftrace");
  ASSERT_TRUE(bytes.ok());
  testing::PerfettoCheck check = testing::CheckPerfettoTrace(*bytes);
  // Ranks are written one after another, so a flow's end (the last arrival)
  // can come earlier in the file than its other slices; trace processor
  // links flows in timestamp order, where the last arrival is last.
  std::vector<std::string> errors;
  for (const std::string& e : check.errors)
    if (e.find("terminated before its source") == std::string::npos) errors.push_back(e);
  EXPECT_TRUE(errors.empty()) << errors[0];
  EXPECT_EQ(check.flows, 15u);
  std::set<std::string> names;
  for (const auto& [uuid, pid] : check.process_pids) names.insert(check.track_names[uuid]);
  EXPECT_EQ(names,
            (std::set<std::string>{"rank 0 · node0 · pid 1000", "rank 1 · node0 · pid 1001",
                                   "rank 2 · node1 · pid 1002", "rank 3 · node1 · pid 1003"}));
  // A collective's kernels all end together: on the job clock their ends
  // agree within the clock bound (refined: tens of us) plus the 0.5 us tail.
  std::map<std::string, std::vector<uint64_t>> ends;
  std::map<std::string, std::vector<uint64_t>> starts;
  for (const testing::PerfettoSlice& s : check.slices) {
    auto c = s.args.find("collective");
    if (c == s.args.end()) continue;
    const std::string key = c->second + "/" + s.args.at("comm");
    ends[key].push_back(s.end);
    starts[key].push_back(s.start);
  }
  ASSERT_EQ(ends.size(), 15u);
  for (const auto& [key, v] : ends) {
    ASSERT_EQ(v.size(), 4u) << key;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    EXPECT_LT(*hi - *lo, 150'000u) << key;
  }
  // The straggler's all-reduce starts about 0.2 ms after the others'.
  const auto& ar = starts["all_reduce #0/0"];
  ASSERT_EQ(ar.size(), 4u);
  EXPECT_EQ(*std::max_element(ar.begin(), ar.end()), ar[3]);  // rank 3 is written last
}

// torchrun's agent (no rank, no GPU work) is captured beside the ranks: the
// export leaves it out as `analyze` does, and says so (seen on two H200s:
// "3 ranks on one clock" for a 2-rank job).
TEST(PerfettoJob, ALauncherIsLeftOutAsAnalyzeLeavesItOut) {
  model::SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 3;
  const model::SyntheticJob job(o);
  testing::TempDir dir;
  std::vector<std::string> files = testing::WriteRanks(job, dir);
  files.push_back(dir / "run.sbt");
  ASSERT_TRUE(format::WriteTraceFile(job.LauncherTrace(999), files.back()).ok());
  auto stats = ExportJobPerfetto(files, dir / "job.pftrace");
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->ranks, 2u);
  ASSERT_EQ(stats->left_out.size(), 1u);
  EXPECT_NE(stats->left_out[0].find("pid 999 on node0: no rank, no GPU work"), std::string::npos)
      << stats->left_out[0];
  auto bytes = ReadFileToString(dir / "job.pftrace");
  ASSERT_TRUE(bytes.ok());
  testing::PerfettoCheck check = testing::CheckPerfettoTrace(*bytes);
  for (const auto& [uuid, pid] : check.process_pids) EXPECT_NE(pid, 999) << "the launcher";
  EXPECT_EQ(check.process_pids.size(), 2u);
}

TEST(PerfettoJob, NoReadableRankIsAnError) {
  testing::TempDir dir;
  const std::vector<std::string> files = {dir / "missing.sbt"};
  auto stats = ExportJobPerfetto(files, dir / "job.pftrace");
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("missing.sbt"), std::string::npos);
}

}  // namespace
}  // namespace tracesmith::exporter
