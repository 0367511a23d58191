// The commands that take a format::TraceSource read a run merged on the fly
// (cluster/run_source.h): no temporary file. With $TMPDIR naming a directory
// that does not exist, a merge into a temporary file cannot start, and every
// one of them still reads the run (before, each failed: "cannot create"
// the temporary file). `export -f json` too, since the run's chunks come
// interleaved by start time (it used to merge into a temporary file first).
#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "cluster/test_jobs.h"
#include "testing/launch_sample_trace.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith {
namespace {

using testing::TempDir;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A run of two ranks' files in `dir`: its name (DIR/run.sbt).
std::string WriteTwoRanks(const TempDir& dir) {
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(testing::WriteStreamed(testing::MakeRankTrace(testing::RankSpec{
                                           .pid = 600u + r, .rank = r, .host = "node-1"}),
                                       dir / ("run.rank" + std::to_string(r) + ".sbt"))
                    .ok());
  return dir / "run.sbt";
}

TEST(RunSourceCommands, EveryCommandReadsARunWithoutATemporaryFile) {
  TempDir dir;
  const std::string run = WriteTwoRanks(dir);
  const std::string no_tmp = "TMPDIR=" + dir / "no-such-dir" + " ";
  const std::string commands[] = {
      "analyze " + run,
      "analyze --json " + run,
      "view -n 20 " + run,
      "view --stats " + run,
      "timeline --width 80 " + run,
      "memory " + run,
      "diff " + dir / "run.rank0.sbt " + run,
      "report -q " + run + " -o " + dir / "page.html",
      "export -q -f csv " + run + " -o " + dir / "x.csv",
      "export -q -f sqlite " + run + " -o " + dir / "x.sqlite",
      "export -q -f dot " + run + " -o " + dir / "x.dot",
      "export -q -f folded " + run + " -o " + dir / "x.folded",
  };
  for (const std::string& c : commands) {
    Result r = RunTracesmith(c, no_tmp);
    EXPECT_EQ(r.status, 0) << c << "\n" << r.out;
  }
  EXPECT_TRUE(PathExists(dir / "page.html"));
  EXPECT_TRUE(PathExists(dir / "x.sqlite"));
}

TEST(RunSourceCommands, KinetoJsonOfARunWithoutATemporaryFileIsTheMergedFilesExport) {
  TempDir dir;
  const std::string run = WriteTwoRanks(dir);
  const std::string no_tmp = "TMPDIR=" + dir / "no-such-dir" + " ";
  Result r = RunTracesmith("export -q -f json " + run + " -o " + dir / "fly.json", no_tmp);
  ASSERT_EQ(r.status, 0) << r.out;
  r = RunTracesmith("export -q -f json --gzip " + run + " -o " + dir / "fly.json.gz", no_tmp);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(PathExists(dir / "fly.json.gz"));
  r = RunTracesmith("merge -q " + run + " -o " + dir / "merged.sbt");
  ASSERT_EQ(r.status, 0) << r.out;
  r = RunTracesmith("export -q -f json " + dir / "merged.sbt -o " + dir / "file.json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto fly = ReadFileToString(dir / "fly.json"), file = ReadFileToString(dir / "file.json");
  ASSERT_TRUE(fly.ok() && file.ok());
  EXPECT_TRUE(Contains(*fly, "\"ac2g\"")) << "no flows";
  EXPECT_TRUE(*fly == *file) << "the run's export differs from its merged file's";
}

TEST(RunSourceCommands, KernelPagesOfARun) {
  TempDir dir;
  for (int r = 0; r < 2; ++r)
    ASSERT_TRUE(format::WriteTraceFile(testing::LaunchSampleTrace(),
                                       dir / ("k.rank" + std::to_string(r) + ".sbt"))
                    .ok());
  const std::string no_tmp = "TMPDIR=" + dir / "no-such-dir" + " ";
  Result r = RunTracesmith("kernel -q " + dir / "k.sbt hotK", no_tmp);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "hotK()")) << r.out;
  r = RunTracesmith("kernel -q --launch 11 --pid 100 " + dir / "k.sbt", no_tmp);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "Launch with correlation id 11 (pid 100")) << r.out;
}

}  // namespace
}  // namespace tracesmith
