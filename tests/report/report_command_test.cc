// `tracesmith report` as users run it: the page and its summary line, the
// overwrite rule, bad options, no progress escapes when stderr is not a
// terminal, and a run of several ranks drawn as one timeline group per rank.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"
#include "cluster/test_jobs.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith {
namespace {

using testing::TempDir;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Shipped(const std::string& name) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  return std::string(src ? src : ".") + "/examples/traces/" + name + ".sbt";
}

nlohmann::json PageData(const std::string& html, const std::string& id = "ts-page") {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const size_t begin = html.find(open) + open.size();
  return nlohmann::json::parse(html.substr(begin, html.find("</script>", begin) - begin));
}

TEST(ReportCommand, HelpNamesTheOptions) {
  Result r = RunTracesmith("report --help");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* opt :
       {"--output", "--weight", "--force", "--quiet", "--bins", "--steps", "--with-warmup"})
    EXPECT_TRUE(Has(r.out, opt)) << opt << "\n" << r.out;
}

TEST(ReportCommand, WritesThePageAndRefusesToOverwriteWithoutForce) {
  TempDir dir;
  const std::string out = dir / "t.html";
  Result r = RunTracesmith("report " + Shipped("transformer_train") + " -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "tracesmith: wrote " + out)) << r.out;
  // The window `analyze` reports on: after the warm-up (steps 1-2), 8 steps of 309 kernels and
  // the last iteration's few (--with-warmup: all 3192).
  EXPECT_TRUE(Has(r.out, "2477 kernels")) << r.out;
  EXPECT_TRUE(Has(r.out, "10 steps")) << r.out;
  EXPECT_FALSE(Has(r.out, "\r")) << "progress escapes on a pipe: " << r.out;
  const std::string first = ReadOrMissing(out);
  EXPECT_TRUE(first.starts_with("<!DOCTYPE html>"));

  r = RunTracesmith("report " + Shipped("launch_loop") + " -o " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(Has(r.out, "file exists")) << r.out;
  EXPECT_EQ(ReadOrMissing(out), first) << "the refused run changed the file";

  r = RunTracesmith("report -q --force " + Shipped("launch_loop") + " -o " + out);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "") << "--quiet prints nothing";
  EXPECT_NE(ReadOrMissing(out), first);

  r = RunTracesmith("report --force --with-warmup " + Shipped("transformer_train") + " -o " + out);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "3192 kernels")) << r.out;
}

TEST(ReportCommand, BadWeightIsAClearError) {
  TempDir dir;
  Result r =
      RunTracesmith("report --weight time " + Shipped("launch_loop") + " -o " + (dir / "x.html"));
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(Has(r.out, "gpu-time")) << r.out;
  EXPECT_FALSE(PathExists(dir / "x.html"));
  r = RunTracesmith("report " + (dir / "missing.sbt") + " -o " + (dir / "y.html"));
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(Has(r.out, "missing.sbt")) << r.out;
}

TEST(ReportCommand, LaunchWeightCountsLaunches) {
  TempDir dir;
  Result r = RunTracesmith("report --weight launches " + Shipped("launch_loop") + " -o " +
                           (dir / "l.html"));
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json page = PageData(ReadOrMissing(dir / "l.html"));
  EXPECT_EQ(page["flame"]["weight"], "launches");
  EXPECT_EQ(page["flame"]["total"], page["flame"]["ops"]);
}

// `export -f folded`: the flame graph's folded stacks, the golden file of
// flame_test.cc (report/flame.h) byte for byte; --weight only for it.
TEST(ExportFolded, WritesTheFoldedStacksOfTheWholeTrace) {
  TempDir dir;
  const std::string out = dir / "l.folded";
  Result r = RunTracesmith("export " + Shipped("launch_loop") + " -f folded -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "2 stacks")) << r.out;
  const char* src = std::getenv("TS_SOURCE_DIR");
  EXPECT_EQ(ReadOrMissing(out), ReadOrMissing(std::string(src ? src : ".") +
                                              "/tests/report/golden/launch_loop.folded"));
  r = RunTracesmith("export " + Shipped("launch_loop") + " -f folded --weight launches -o " +
                    (dir / "n.folded"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(ReadOrMissing(dir / "n.folded"), ";tiny(float*, int) 3000\n"));
  r = RunTracesmith("export " + Shipped("launch_loop") + " -f csv --weight launches -o " +
                    (dir / "x.csv"));
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(Has(r.out, "--weight applies to -f folded only")) << r.out;
  r = RunTracesmith("export " + Shipped("launch_loop") + " -f folded -o " + out);
  EXPECT_NE(r.status, 0) << "overwrote without --force";
}

// A job's traces (run.rank0.sbt ..): merged, one timeline group per rank.
TEST(ReportCommand, ARunOfRanksHasOneTimelineGroupPerRank) {
  TempDir dir;
  for (int r = 0; r < 3; ++r)
    ASSERT_TRUE(testing::WriteStreamed(testing::MakeRankTrace(testing::RankSpec{
                                           .pid = 500u + r, .rank = r, .host = "node-1"}),
                                       dir / ("run.rank" + std::to_string(r) + ".sbt"))
                    .ok());
  Result r = RunTracesmith("report " + (dir / "run.sbt") + " -o " + (dir / "run.html"));
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json page = PageData(ReadOrMissing(dir / "run.html"));
  std::set<std::string> ranks;
  for (const auto& lane : page["timeline"]["lanes"]) {
    const std::string group = lane["group"];
    ASSERT_TRUE(group.starts_with("rank ")) << group;
    ranks.insert(group.substr(0, 6));
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"rank 0", "rank 1", "rank 2"}));
  EXPECT_EQ(page["meta"]["processes"].size(), 3u);
  // The embedded report is `analyze --json` of the run, its cross-rank
  // report ("ranks") included.
  const nlohmann::json embedded = PageData(ReadOrMissing(dir / "run.html"), "ts-analysis");
  Result cli = RunTracesmith("analyze --json " + (dir / "run.sbt"));
  ASSERT_EQ(cli.status, 0) << cli.out;
  const nlohmann::json analyzed = nlohmann::json::parse(cli.out.substr(cli.out.find('{')));
  ASSERT_TRUE(embedded.contains("ranks"));
  EXPECT_EQ(embedded["ranks"]["ranks"].size(), 3u);
  EXPECT_EQ(embedded, analyzed);
}

}  // namespace
}  // namespace tracesmith
