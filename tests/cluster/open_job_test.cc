// OpenedRun: one file read in place; several merged into a temporary file
// that goes away with the object.
#include "tracesmith/cluster/open_job.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "cluster/test_jobs.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"

namespace tracesmith::cluster {
namespace {

using testing::MakeRankTrace;
using testing::RankSpec;
using testing::TempDir;

TEST(OpenedRun, OneFileIsReadInPlace) {
  TempDir dir;
  const std::string a = dir / "a.sbt";
  ASSERT_TRUE(testing::WriteStreamed(MakeRankTrace(RankSpec{}), a).ok());
  auto run = OpenedRun::Open(std::vector{a});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_FALSE(run->merged());
  EXPECT_EQ(run->path(), a);
  EXPECT_EQ(run->name(), a);
  EXPECT_EQ(run->merge_result(), nullptr);
}

TEST(OpenedRun, SeveralAreReadOnTheFlyWithoutATemporaryFile) {
  TempDir dir, tmp;
  for (int r = 0; r < 3; ++r)
    ASSERT_TRUE(testing::WriteStreamed(MakeRankTrace(RankSpec{.pid = 10u + r, .rank = r}),
                                       dir / ("run.rank" + std::to_string(r) + ".sbt"))
                    .ok());
  const char* old_tmp = getenv("TMPDIR");
  const std::string saved = old_tmp ? old_tmp : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  {
    auto run = OpenedRun::Open(std::vector{dir / "run.sbt"});
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_TRUE(run->merged());
    EXPECT_EQ(run->files().size(), 3u);
    EXPECT_EQ(run->name(), dir / "run.sbt (3 traces)");
    EXPECT_EQ(run->path(), "");
    ASSERT_NE(run->merge_result(), nullptr);
    EXPECT_EQ(run->merge_result()->inputs.size(), 3u);
    // Moving the run keeps its source.
    OpenedRun moved = std::move(*run);
    auto source = moved.source();
    ASSERT_TRUE(source.ok());
    model::Trace t;
    ASSERT_TRUE(format::ReadTrace(**source, &t).ok());
    EXPECT_EQ(t.Rows<model::Process>().size(), 3u);
    EXPECT_TRUE(tmp.List().empty());
  }
  if (old_tmp)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");
  EXPECT_TRUE(tmp.List().empty());
}

}  // namespace
}  // namespace tracesmith::cluster
