// Commands on a job's set of trace files, "a run" (issue #17 item 1): `merge`, and every command
// that reads a trace given several files, a directory or a capture's output name; `export -f kineto
// -o DIR/` writing one rank-<N>.json per process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"
#include "cluster/test_jobs.h"
#include "testing/synthetic_job_files.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic_job.h"

namespace tracesmith {
namespace {

using testing::MakeRankTrace;
using testing::RankSpec;
using testing::TempDir;

// run.rank0.sbt .. run.rank<n-1>.sbt in `dir`, as torchrun leaves them.
void WriteRun(const TempDir& dir, int n, const std::string& stem = "run") {
  for (int r = 0; r < n; ++r)
    ASSERT_TRUE(testing::WriteStreamed(
                    MakeRankTrace(RankSpec{.pid = 500u + r, .rank = r, .host = "node-1"}),
                    dir / (stem + ".rank" + std::to_string(r) + ".sbt"))
                    .ok());
}

uint64_t Events(const std::string& path) {
  auto t = format::ReadTraceFile(path);
  return t.ok() ? t->EventCount() : 0;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MergeCommand, WritesOneTraceOfEveryProcessAndSaysWhat) {
  TempDir dir;
  WriteRun(dir, 3);
  const uint64_t events =
      Events(dir / "run.rank0.sbt") + Events(dir / "run.rank1.sbt") + Events(dir / "run.rank2.sbt");
  Result r = RunTracesmith("merge " + dir / "run.sbt" + " -o " + dir / "job.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "tracesmith: merged 3 traces (ranks 0-2 on host node-1), " +
                             std::to_string(events) + " events, "))
      << r.out;
  EXPECT_TRUE(Has(r.out, " -> " + dir / "job.sbt" + " (")) << r.out;
  EXPECT_EQ(Events(dir / "job.sbt"), events);
  // An existing output only with --force; never an input.
  r = RunTracesmith("merge " + dir / "run.rank0.sbt " + dir / "run.rank1.sbt -o " +
                    dir / "job.sbt");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.out, "file exists (use --force to overwrite)")) << r.out;
  r = RunTracesmith("merge " + dir / "run.rank0.sbt " + dir / "run.rank1.sbt -o " +
                    dir / "job.sbt --force -q");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "");
  const std::string before = ReadOrMissing(dir / "run.rank1.sbt");
  r = RunTracesmith("merge " + dir / "run.rank0.sbt " + dir / "run.rank1.sbt -o " +
                    dir / "run.rank1.sbt --force");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.out, "refusing to overwrite the input")) << r.out;
  EXPECT_EQ(ReadOrMissing(dir / "run.rank1.sbt"), before);
  // Nothing to merge.
  r = RunTracesmith("merge " + dir / "none.sbt -o " + dir / "x.sbt");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.out, "no trace matches '" + dir / "none.sbt" +
                             "': looked for none.sbt, none.rank*.sbt, none.pid*.sbt in " +
                             dir.path()))
      << r.out;
}

TEST(MergeCommand, ADamagedInputIsAWarningOrWithStrictAnError) {
  TempDir dir;
  WriteRun(dir, 2);
  const std::string cut = dir / "run.rank1.sbt";
  ASSERT_EQ(::truncate(cut.c_str(), static_cast<off_t>(FileSize(cut).value() / 2)), 0);
  Result r = RunTracesmith("merge " + dir / "run.sbt -o " + dir / "job.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "tracesmith: warning: " + cut + " is damaged (")) << r.out;
  EXPECT_TRUE(Has(r.out, "merging only its readable part")) << r.out;
  EXPECT_GT(Events(dir / "job.sbt"), Events(dir / "run.rank0.sbt"));
  r = RunTracesmith("merge " + dir / "run.sbt -o " + dir / "strict.sbt --strict");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.out, "tracesmith: error: " + cut + " is damaged")) << r.out;
  EXPECT_FALSE(PathExists(dir / "strict.sbt"));
  // The merged file says it holds only part of an input: info lists the
  // input's damage, with its lost bytes as DATA LOSS stats, and --strict
  // refuses it although the merged file itself is whole.
  r = RunTracesmith("info " + dir / "job.sbt");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "Damage in the inputs of the merge")) << r.out;
  EXPECT_TRUE(Has(r.out, cut + " is damaged (")) << r.out;
  EXPECT_TRUE(Has(r.out, "merge.input_unreadable_bytes")) << r.out;
  r = RunTracesmith("info --strict " + dir / "job.sbt");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "was merged from 1 damaged input")) << r.out;
  // ...and so does a merge of that merge: the damage travels with its processes.
  r = RunTracesmith("merge " + dir / "job.sbt -o " + dir / "again.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(RunTracesmith("info --strict " + dir / "again.sbt").status, 1);
}

TEST(RunCommands, EveryReadingCommandTakesARun) {
  TempDir dir;
  WriteRun(dir, 2);
  const std::string run = dir / "run.sbt";
  Result r = RunTracesmith("analyze " + run);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "Trace:    " + run + " (2 traces)")) << r.out;
  r = RunTracesmith("analyze --json " + dir.path());
  ASSERT_EQ(r.status, 0) << r.out;
  auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["source"], dir.path() + " (2 traces)");
  r = RunTracesmith("analyze " + dir / "run.rank0.sbt " + dir / "run.rank1.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "Trace:    " + dir / "run.rank0.sbt + 1 more (2 traces)")) << r.out;

  r = RunTracesmith("view -n 400 " + run);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "pid=500 ")) << r.out;
  EXPECT_TRUE(Has(r.out, "pid=501 ")) << r.out;
  r = RunTracesmith("view --stats " + run);
  ASSERT_EQ(r.status, 0) << r.out;
  const uint64_t events = Events(dir / "run.rank0.sbt") + Events(dir / "run.rank1.sbt");
  EXPECT_TRUE(Has(r.out, std::to_string(events) + " events match")) << r.out;
  r = RunTracesmith("timeline --width 80 " + run);
  ASSERT_EQ(r.status, 0) << r.out;
  r = RunTracesmith("memory --json " + run);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["source"], run + " (2 traces)");
  r = RunTracesmith("diff " + dir / "run.rank0.sbt " + run);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "A: " + dir / "run.rank0.sbt\nB: " + run + " (2 traces)")) << r.out;
  r = RunTracesmith("export " + run + " -f perfetto -q");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(PathExists(dir / "run.pftrace"));
  r = RunTracesmith("info " + run);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "Run:         " + run + " (2 traces)\n  " + dir / "run.rank0.sbt\n  " +
                             dir / "run.rank1.sbt\n"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "File:        " + dir / "run.rank1.sbt")) << r.out;
  // No temporary merge left behind.
  EXPECT_EQ(dir.List(),
            (std::vector<std::string>{"run.pftrace", "run.rank0.sbt", "run.rank1.sbt"}));
}

TEST(RunCommands, ANamedFileWithSiblingsIsTheRunUnlessSingle) {
  TempDir dir;
  WriteRun(dir, 1);
  ASSERT_EQ(::rename((dir / "run.rank0.sbt").c_str(), (dir / "run.sbt").c_str()), 0);
  ASSERT_TRUE(
      testing::WriteStreamed(MakeRankTrace(RankSpec{.pid = 77, .rank = -1}), dir / "run.pid77.sbt")
          .ok());
  Result r = RunTracesmith("analyze " + dir / "run.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "tracesmith: note: " + dir / "run.sbt" +
                             " is one of a run of 2 traces; reading them all together (--single "
                             "reads " +
                             dir / "run.sbt" + " alone)"))
      << r.out;
  r = RunTracesmith("analyze --single " + dir / "run.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(Has(r.out, "note:")) << r.out;
  EXPECT_TRUE(Has(r.out, "Trace:    " + dir / "run.sbt\n")) << r.out;
}

TEST(RunCommands, ADamagedRankIsNamedAndStrictRefusesIt) {
  TempDir dir;
  WriteRun(dir, 2);
  const std::string cut = dir / "run.rank0.sbt";
  ASSERT_EQ(::truncate(cut.c_str(), static_cast<off_t>(FileSize(cut).value() / 2)), 0);
  for (const std::string cmd : {"analyze", "timeline", "view --stats", "memory"}) {
    Result r = RunTracesmith(cmd + " " + dir / "run.sbt");
    EXPECT_EQ(r.status, 0) << cmd << r.out;
    EXPECT_TRUE(Has(r.out, "tracesmith: warning: " + cut + " is damaged")) << cmd << r.out;
    r = RunTracesmith(cmd + " --strict " + dir / "run.sbt");
    EXPECT_EQ(r.status, 1) << cmd << r.out;
    EXPECT_TRUE(Has(r.out, "tracesmith: error: " + cut + " is damaged")) << cmd << r.out;
  }
  Result r = RunTracesmith("export --strict " + dir / "run.sbt -o " + dir / "x.json -f json");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_FALSE(PathExists(dir / "x.json"));
}

// `analyze` of a run of several processes adds the cross-rank analysis
// (job/job_report.h): the text's "Job" section and the JSON's `ranks`.
TEST(RunCommands, AnalyzeOfAJobAddsTheCrossRankReport) {
  TempDir dir;
  model::SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 2);
  o.steps = 6;
  o.ranks[2].delay_per_step_ns = 400'000;
  const model::SyntheticJob job(o);
  testing::WriteRanks(job, dir, "job");
  ASSERT_FALSE(::testing::Test::HasFailure());
  Result r = RunTracesmith("analyze " + dir / "job.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "== Job: 4 ranks on 2 hosts ==")) << r.out;
  EXPECT_TRUE(Has(r.out, "rank 2 (node1, pid 1002) arrives last at 6 of ")) << r.out;
  r = RunTracesmith("analyze --json " + dir / "job.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  ASSERT_TRUE(j.contains("ranks")) << r.out;
  EXPECT_EQ(j["ranks"]["ranks"].size(), 4u);
  ASSERT_FALSE(j["ranks"]["stragglers"].empty());
  EXPECT_EQ(j["ranks"]["stragglers"][0]["rank"], 2);
  EXPECT_TRUE(j.contains("kernels") || j.contains("window")) << "the single-trace report stays";
  // One process: no cross-rank section.
  r = RunTracesmith("analyze --single " + dir / "job.rank0.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(Has(r.out, "== Job:")) << r.out;
}

// The job's Perfetto export (several processes) says a damaged rank file as
// every command does, and --strict refuses it before writing.
TEST(RunCommands, JobPerfettoExportSaysDamageAndStrictRefusesIt) {
  TempDir dir;
  model::SyntheticJobOptions o = model::MakeSyntheticJobOptions(3, 3);
  o.steps = 6;
  const model::SyntheticJob job(o);
  testing::WriteRanks(job, dir, "job");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string cut = dir / "job.rank2.sbt";
  auto bytes = ReadFileToString(cut);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(WriteStringToFile(cut, bytes->substr(0, bytes->size() * 2 / 3)).ok());
  Result r =
      RunTracesmith("export -f perfetto --strict -o " + dir / "job.pftrace " + dir / "job.sbt");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "job.rank2.sbt")) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "job.pftrace"));
  r = RunTracesmith("export -f perfetto -o " + dir / "job.pftrace " + dir / "job.sbt");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "warning: " + cut + " is damaged")) << r.out;
  EXPECT_TRUE(Has(r.out, "3 ranks on one clock")) << r.out;
}

// Progress (issue #19 item 3): on a terminal, analyze/memory/export/report
// say what they are doing on one line of stderr that is erased when done;
// never when stderr is a pipe or with --quiet. (TRACESMITH_PROGRESS_DELAY_S=0:
// the line at once instead of after half a second.)
TEST(Progress, ALineOnATerminalNeverOnAPipe) {
  if (!HaveScript()) GTEST_SKIP() << "no `script`";
  const char* src = std::getenv("TS_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::string trace = std::string(src) + "/examples/traces/mlp_train.sbt";
  const std::string bin = ::tracesmith::testing::TracesmithBin();
  TempDir dir;
  const std::string env = "TRACESMITH_PROGRESS_DELAY_S=0 ";
  // (command, arguments): stdout thrown away, the line is on stderr.
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"analyze", trace + " >/dev/null"},
      {"memory", trace + " >/dev/null"},
      {"export", "--force -f json -o " + dir / "x.json " + trace}};
  for (const auto& [name, args] : commands) {
    const std::string tty = RunInTerminal(env + bin + " " + name + " " + args);
    EXPECT_TRUE(Has(tty, "tracesmith: " + name + " ")) << name << "\n" << tty;
    EXPECT_TRUE(Has(tty, "\r\033[K")) << "the line is erased: " << name;
    const Result piped = RunTracesmith(name + " " + args, env);
    EXPECT_FALSE(Has(piped.out, "\r")) << name << "\n" << piped.out;
    const std::string quiet = RunInTerminal(env + bin + " " + name + " -q " + args);
    EXPECT_FALSE(Has(quiet, "tracesmith: " + name + " ")) << "--quiet: " << name << "\n" << quiet;
  }
  const std::string tty = RunInTerminal(env + bin + " analyze " + trace + " >/dev/null");
  EXPECT_TRUE(Has(tty, "tracesmith: analyze reading " + trace)) << tty;
  EXPECT_TRUE(Has(tty, "100%")) << tty;
}

TEST(ExportPerRank, OneKinetoFilePerRankWithItsDistributedInfo) {
  TempDir dir;
  WriteRun(dir, 3);
  Result r = RunTracesmith("export " + dir / "run.sbt -f kineto -o " + dir / "hta/");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(
      Has(r.out, "tracesmith: wrote " + dir / "hta" + "/: 3 files (rank-0 .. rank-2.json), "))
      << r.out;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string path = dir / ("hta/rank-" + std::to_string(rank) + ".json");
    auto doc = nlohmann::json::parse(ReadOrMissing(path), nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << path;
    EXPECT_EQ(doc["distributedInfo"], nlohmann::json({{"rank", rank}})) << path;
    // Only this rank's process: host rows on its pid, GPU rows on its devices.
    for (const auto& e : doc["traceEvents"])
      if (e.value("cat", "") == "cuda_runtime") {
        ASSERT_EQ(e["pid"], 500 + rank) << path;
      }
    EXPECT_GT(doc["traceEvents"].size(), 100u);
  }
  // Again: the files exist, so --force.
  r = RunTracesmith("export " + dir / "run.sbt -f json --per-rank -o " + dir / "hta");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.out, "file exists")) << r.out;
  // A merged file gives the same directory.
  ASSERT_EQ(RunTracesmith("merge " + dir / "run.sbt -o " + dir / "job.sbt -q").status, 0);
  r = RunTracesmith("export " + dir / "job.sbt -f json --per-rank -q");
  ASSERT_EQ(r.status, 0) << r.out;
  for (int rank = 0; rank < 3; ++rank) {
    auto doc = nlohmann::json::parse(
        ReadOrMissing(dir / ("job-ranks/rank-" + std::to_string(rank) + ".json")), nullptr, false);
    ASSERT_FALSE(doc.is_discarded());
    EXPECT_EQ(doc["distributedInfo"]["rank"], rank);
  }
  r = RunTracesmith("export " + dir / "run.sbt -f perfetto --per-rank -o " + dir / "p");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.out, "--per-rank applies to -f json")) << r.out;
}

}  // namespace
}  // namespace tracesmith
