// AtomicFile and CheckOutputPath: what is replaced, what is refused, and
// that nothing partial is ever left under the target's name.
#include "tracesmith/base/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ostream>
#include <string>

#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith {
namespace {

using testing::TempDir;

Status WriteAll(AtomicFile& f, const std::string& data) {
  if (::write(f.fd(), data.data(), data.size()) != static_cast<ssize_t>(data.size()))
    return IoError("short write");
  return OkStatus();
}

std::string Read(const std::string& path) {
  auto s = ReadFileToString(path);
  return s.ok() ? *s : "<missing>";
}

TEST(AtomicFileTest, CommitReplacesTheTargetAndLeavesNothingElse) {
  TempDir dir;
  const std::string target = dir / "out.json";
  ASSERT_TRUE(WriteStringToFile(target, "old").ok());
  ::chmod(target.c_str(), 0600);
  auto f = AtomicFile::Create(target);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->temp_path().find(dir.path() + "/.out.json.tmp-"), 0u) << (*f)->temp_path();
  ASSERT_TRUE(WriteAll(**f, "new contents").ok());
  EXPECT_EQ(Read(target), "old");  // untouched until the commit
  ASSERT_TRUE((*f)->Commit().ok());
  EXPECT_EQ(Read(target), "new contents");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"out.json"});
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the replaced file's mode is kept";
}

TEST(AtomicFileTest, WithoutCommitTheTargetIsUntouchedAndTheTempFileGone) {
  TempDir dir;
  const std::string target = dir / "out.sqlite";
  ASSERT_TRUE(WriteStringToFile(target, "precious").ok());
  {
    auto f = AtomicFile::Create(target);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(WriteAll(**f, "partial").ok());
    EXPECT_EQ(dir.List().size(), 2u);
  }  // destroyed: an error path
  EXPECT_EQ(Read(target), "precious");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"out.sqlite"});
  // A target that did not exist stays absent.
  {
    auto f = AtomicFile::Create(dir / "fresh.csv");
    ASSERT_TRUE(f.ok());
    (*f)->Discard();
  }
  EXPECT_EQ(dir.List(), std::vector<std::string>{"out.sqlite"});
}

// Two writers of one new output (two exports to one new -o without --force):
// the first to commit creates it; the second finds it there and replaces
// nothing. A target that existed at Create (--force) is replaced as before.
TEST(AtomicFileTest, ATargetThatAppearedWhileWritingIsNotReplaced) {
  TempDir dir;
  const std::string target = dir / "new.json";
  auto first = AtomicFile::Create(target);
  auto second = AtomicFile::Create(target);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(WriteAll(**first, "first").ok());
  ASSERT_TRUE(WriteAll(**second, "second").ok());
  ASSERT_TRUE((*first)->Commit().ok());
  Status st = (*second)->Commit();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("another program created it while this one was writing it"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(Read(target), "first");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"new.json"});
  auto forced = AtomicFile::Create(target);
  ASSERT_TRUE(forced.ok());
  ASSERT_TRUE(WriteAll(**forced, "forced").ok());
  ASSERT_TRUE((*forced)->Commit().ok());
  EXPECT_EQ(Read(target), "forced");
}

// WriteFileAtomically: the stream's bytes replace the target and their size
// is returned; a writer that fails leaves the target and no temporary file.
TEST(AtomicFileTest, WriteFileAtomicallyReplacesOnlyWhenTheWriterSucceeds) {
  TempDir dir;
  const std::string target = dir / "out.folded";
  ASSERT_TRUE(WriteStringToFile(target, "old").ok());
  auto bytes = WriteFileAtomically(target, {}, [](std::ostream& out) {
    out << "main;k 42\n";
    return OkStatus();
  });
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, 10u);
  EXPECT_EQ(Read(target), "main;k 42\n");
  auto failed = WriteFileAtomically(target, {}, [](std::ostream& out) {
    out << "partial";
    return InvalidArgument("the writer gave up");
  });
  EXPECT_EQ(failed.status().message(), "the writer gave up");
  EXPECT_EQ(Read(target), "main;k 42\n");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"out.folded"});
}

TEST(AtomicFileTest, RefusesWhatIsNotARegularFile) {
  TempDir dir;
  ASSERT_EQ(::mkdir((dir / "empty_dir").c_str(), 0755), 0);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  ASSERT_EQ(::symlink((dir / "nowhere").c_str(), (dir / "dangling").c_str()), 0);
  for (const char* name : {"empty_dir", "fifo", "dangling"}) {
    auto f = AtomicFile::Create(dir / name);
    ASSERT_FALSE(f.ok()) << name;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(f.status().message().find("refusing"), std::string::npos) << f.status().message();
  }
  auto dev = AtomicFile::Create("/dev/null");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("/dev/null is a character device"), std::string::npos)
      << dev.status().message();
  struct stat st {};
  EXPECT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"dangling", "empty_dir", "fifo"}));
}

TEST(AtomicFileTest, RefusesAnInputThroughHardAndSymbolicLinks) {
  TempDir dir;
  const std::string input = dir / "a.sbt";
  ASSERT_TRUE(WriteStringToFile(input, "trace").ok());
  ASSERT_EQ(::link(input.c_str(), (dir / "hard.sbt").c_str()), 0);
  ASSERT_EQ(::symlink(input.c_str(), (dir / "soft.sbt").c_str()), 0);
  const std::string inputs[] = {input};
  for (const char* name : {"a.sbt", "hard.sbt", "soft.sbt"}) {
    Status st = CheckOutputPath(dir / name, inputs);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(st.message().find("is the input"), std::string::npos) << st.message();
    EXPECT_FALSE(AtomicFile::Create(dir / name, inputs).ok()) << name;
  }
  // The same check the other way round: the input given through a link.
  const std::string linked[] = {dir / "soft.sbt"};
  EXPECT_FALSE(CheckOutputPath(input, linked).ok());
  EXPECT_TRUE(CheckOutputPath(dir / "other.json", inputs).ok());
  EXPECT_EQ(Read(input), "trace");
}

TEST(AtomicFileTest, ASymbolicLinkTargetReplacesTheFileAndKeepsTheLink) {
  TempDir dir;
  ASSERT_TRUE(WriteStringToFile(dir / "real.json", "old").ok());
  ASSERT_EQ(::symlink("real.json", (dir / "link.json").c_str()), 0);
  auto f = AtomicFile::Create(dir / "link.json");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE(WriteAll(**f, "new").ok());
  ASSERT_TRUE((*f)->Commit().ok());
  struct stat st {};
  ASSERT_EQ(::lstat((dir / "link.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(Read(dir / "real.json"), "new");
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"link.json", "real.json"}));
}

// Ctrl-C while writing: the handler removes the temporary file, the process
// still dies of SIGINT, and the target keeps its old contents.
TEST(AtomicFileTest, SignalCleanupRemovesTheTempFile) {
  TempDir dir;
  const std::string target = dir / "out.pftrace";
  ASSERT_TRUE(WriteStringToFile(target, "old").ok());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGINT, SIG_DFL);
    InstallTempFileCleanupOnSignals();
    auto f = AtomicFile::Create(target);
    if (!f.ok()) ::_exit(3);
    (void)WriteAll(**f, "half an export");
    ::raise(SIGINT);
    ::_exit(4);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_EQ(Read(target), "old");
  EXPECT_EQ(dir.List(), std::vector<std::string>{"out.pftrace"});
}

TEST(AtomicFileTest, CreateFileBesideMakesUniqueHiddenNames) {
  TempDir dir;
  auto a = CreateFileBeside(dir / "t.sbt", "old");
  auto b = CreateFileBeside(dir / "t.sbt", "old");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->find(dir.path() + "/.t.sbt.old-" + std::to_string(::getpid()) + "-"), 0u) << *a;
  EXPECT_FALSE(CreateFileBeside(dir.path() + "/", "tmp").ok());
}

TEST(AtomicFileTest, CheckOutputFileReplacesAnExistingFileOnlyWhenAsked) {
  TempDir dir;
  const std::string out = dir / "out.json";
  EXPECT_TRUE(CheckOutputFile(out, {}, false).ok());
  ASSERT_TRUE(WriteStringToFile(out, "old").ok());
  Status st = CheckOutputFile(out, {}, false);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), out + ": file exists (use --force to overwrite)");
  EXPECT_EQ(CheckOutputFile(out, {}, false, "pass overwrite=True").message(),
            out + ": file exists (pass overwrite=True)");
  EXPECT_TRUE(CheckOutputFile(out, {}, true).ok());
  // An input or a directory is refused even with overwrite.
  const std::string inputs[] = {out};
  EXPECT_EQ(CheckOutputFile(out, inputs, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckOutputFile(dir.path(), {}, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Read(out), "old");
}

}  // namespace
}  // namespace tracesmith
