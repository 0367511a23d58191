// ResolveRun: files, directories and capture stems, in one order, with
// errors that say what was looked for; the naming rules shared with capture.
#include "tracesmith/cluster/job_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/job_file_names.h"

namespace tracesmith::cluster {
namespace {

using testing::TempDir;

void Touch(const std::string& path) { ASSERT_TRUE(WriteStringToFile(path, "x").ok()) << path; }

std::vector<std::string> Files(std::vector<std::string> args, bool single = false) {
  auto r = ResolveRun(args, single);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->files : std::vector<std::string>{};
}

TEST(RunNames, CaptureNamesAndTheirInverse) {
  using format::ParseRunMember;
  using format::PerProcessOutputPath;
  EXPECT_EQ(PerProcessOutputPath("run.sbt", 42, -1), "run.pid42.sbt");
  EXPECT_EQ(PerProcessOutputPath("d.v1/run.sbt", 42, 3), "d.v1/run.rank3.sbt");
  EXPECT_EQ(PerProcessOutputPath("d.v1/run", 7, -1), "d.v1/run.pid7");
  // A leading dot is not an extension: the name stays whole.
  EXPECT_EQ(PerProcessOutputPath("d/.hidden", 7, -1), "d/.hidden.pid7");
  for (const char* base : {"run.sbt", "d.v1/run", "d/.hidden", "a.b.c"}) {
    for (int rank : {-1, 0, 12}) {
      const std::string path = PerProcessOutputPath(base, 99, rank);
      const format::RunNameParts b = format::SplitRunName(base);
      const std::string name = path.substr(path.rfind('/') + 1);
      auto m = ParseRunMember(name, b.stem, b.ext);
      ASSERT_TRUE(m.has_value()) << path;
      EXPECT_EQ(m->kind, rank >= 0 ? format::RunMember::kRank : format::RunMember::kPid);
      EXPECT_EQ(m->number, rank >= 0 ? uint64_t(rank) : 99u);
    }
  }
  EXPECT_FALSE(ParseRunMember("run.sbt", "run", ".sbt"));
  EXPECT_FALSE(ParseRunMember("run.pid.sbt", "run", ".sbt"));
  EXPECT_FALSE(ParseRunMember("run.pidx1.sbt", "run", ".sbt"));
  EXPECT_FALSE(ParseRunMember("run.x.rank1.sbt", "run", ".sbt"));
  EXPECT_FALSE(ParseRunMember("run.rank1.json", "run", ".sbt"));
  EXPECT_TRUE(format::NaturalLess("r.rank2.sbt", "r.rank10.sbt"));
}

TEST(ResolveRun, AStemFindsItsFileAndItsProcessesFilesByRankThenPid) {
  TempDir dir;
  for (const char* n :
       {"run.sbt", "run.pid900.sbt", "run.rank10.sbt", "run.rank2.sbt", "run.pid31.sbt",
        "run.rank0.sbt", "runner.rank1.sbt", "run.sbt.bak", "run.rank3.json", "other.sbt"})
    Touch(dir / n);
  auto r = ResolveRun(std::vector{dir / "run.sbt"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->files, (std::vector<std::string>{dir / "run.rank0.sbt", dir / "run.rank2.sbt",
                                                dir / "run.rank10.sbt", dir / "run.sbt",
                                                dir / "run.pid31.sbt", dir / "run.pid900.sbt"}));
  EXPECT_EQ(r->expanded, std::vector<std::string>{dir / "run.sbt"});
  // Under torchrun no process writes run.sbt itself.
  ASSERT_EQ(::unlink((dir / "run.sbt").c_str()), 0);
  r = ResolveRun(std::vector{dir / "run.sbt"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->files.size(), 5u);
  EXPECT_TRUE(r->expanded.empty());
  // A process's own file is that file.
  EXPECT_EQ(Files({dir / "run.rank2.sbt"}), std::vector<std::string>{dir / "run.rank2.sbt"});
  // One file without siblings: itself, as before runs existed.
  EXPECT_EQ(Files({dir / "other.sbt"}), std::vector<std::string>{dir / "other.sbt"});
}

TEST(ResolveRun, DirectoriesAndFilesInOneOrderEachFileOnce) {
  TempDir dir;
  for (const char* n :
       {"b.rank1.sbt", "a.rank0.sbt", "z.sbt", "c.pid5.sbt", ".hidden.sbt", "notes.txt"})
    Touch(dir / n);
  ASSERT_EQ(::mkdir((dir / "sub.sbt").c_str(), 0755), 0);  // a directory named like a trace
  const std::vector<std::string> all = {dir / "a.rank0.sbt", dir / "b.rank1.sbt", dir / "z.sbt",
                                        dir / "c.pid5.sbt"};
  EXPECT_EQ(Files({dir.path()}), all);
  EXPECT_EQ(Files({dir.path() + "/"}), all);
  // Arguments in any order, a file named twice (and through a link): once each.
  ASSERT_EQ(::symlink((dir / "z.sbt").c_str(), (dir / "link.txt").c_str()), 0);
  EXPECT_EQ(
      Files({dir / "z.sbt", dir / "c.pid5.sbt", dir / "b.rank1.sbt", dir.path(), dir / "link.txt"}),
      all);
}

TEST(ResolveRun, ErrorsSayWhatWasLookedForAndWhere) {
  TempDir dir;
  auto r = ResolveRun(std::vector{dir / "run.sbt"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "no trace matches '" + dir / "run.sbt" +
                                      "': looked for run.sbt, run.rank*.sbt, run.pid*.sbt in " +
                                      dir.path());
  r = ResolveRun(std::vector<std::string>{"nothing-here.sbt"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("in the current directory"), std::string::npos);
  ASSERT_EQ(::mkdir((dir / "empty").c_str(), 0755), 0);
  r = ResolveRun(std::vector{dir / "empty"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "no trace in directory " + dir / "empty" + " (it holds no .sbt file)");
  EXPECT_FALSE(ResolveRun(std::vector<std::string>{}).ok());
  EXPECT_FALSE(ResolveRun(std::vector<std::string>{""}).ok());
  r = ResolveRun(std::vector<std::string>{"/dev/null"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a trace file or a directory"), std::string::npos);
}

TEST(ResolveRun, SingleReadsTheNamedFileAlone) {
  TempDir dir;
  for (const char* n : {"run.sbt", "run.pid7.sbt"}) Touch(dir / n);
  EXPECT_EQ(Files({dir / "run.sbt"}, true), std::vector<std::string>{dir / "run.sbt"});
  EXPECT_FALSE(ResolveRun(std::vector{dir / "run.sbt", dir / "run.pid7.sbt"}, true).ok());
  EXPECT_FALSE(ResolveRun(std::vector{dir.path()}, true).ok());
  EXPECT_FALSE(ResolveRun(std::vector{dir / "gone.sbt"}, true).ok());
}

}  // namespace
}  // namespace tracesmith::cluster
