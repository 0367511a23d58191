// Output paths a careless or hostile user gives: the input itself (also
// through links), a directory, a FIFO, a write that fails part-way, and
// `profile --force` over a trace when the command records nothing. Every
// pre-existing file must survive untouched, and nothing partial is left.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "testing/sbt_forge.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

using testing::TempDir;

class OutputSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model::SyntheticOptions o;
    o.kernels = 500;
    ASSERT_TRUE(format::WriteTraceFile(model::MakeSyntheticTrace(o), trace_).ok());
    original_ = ReadOrMissing(trace_);
    ASSERT_GT(original_.size(), 1000u);
  }
  TempDir dir_;
  const std::string trace_ = dir_ / "a.sbt";
  std::string original_;
};

TEST_F(OutputSafetyTest, ExportNeverWritesOntoItsInput) {
  ASSERT_EQ(::link(trace_.c_str(), (dir_ / "hard.sbt").c_str()), 0);
  ASSERT_EQ(::symlink(trace_.c_str(), (dir_ / "soft.sbt").c_str()), 0);
  for (const char* format : {"perfetto", "json", "sqlite", "csv", "dot"}) {
    for (const char* out : {"a.sbt", "hard.sbt", "soft.sbt"}) {
      Result r = RunTracesmith("export " + trace_ + " -f " + format + " -o " + (dir_ / out));
      EXPECT_EQ(r.status, 1) << format << " -o " << out << ": " << r.out;
      EXPECT_NE(r.out.find("is the input " + trace_ + " (the same file)"), std::string::npos)
          << r.out;
      ASSERT_EQ(ReadOrMissing(trace_), original_)
          << format << " -o " << out << " changed the input";
    }
  }
  Result gz = RunTracesmith("export " + trace_ + " -f json --gzip -o " + trace_);
  EXPECT_EQ(gz.status, 1) << gz.out;
  EXPECT_EQ(ReadOrMissing(trace_), original_);
  EXPECT_EQ(dir_.List(), (std::vector<std::string>{"a.sbt", "hard.sbt", "soft.sbt"}));
}

TEST_F(OutputSafetyTest, ImportNeverWritesOntoItsInput) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  const std::string data = std::string(src ? src : ".") + "/tests/import/data/xray_basic.log";
  const std::string log = dir_ / "x.log";
  auto bytes = ReadFileToString(data);
  ASSERT_TRUE(bytes.ok()) << data;
  ASSERT_TRUE(WriteStringToFile(log, *bytes).ok());
  ASSERT_EQ(::symlink(log.c_str(), (dir_ / "x.sbt").c_str()), 0);
  for (const std::string& out : {log, dir_ / "x.sbt"}) {
    Result r = RunTracesmith("import " + log + " -o " + out);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("refusing to overwrite the input"), std::string::npos) << r.out;
    EXPECT_EQ(ReadOrMissing(log), *bytes);
  }
  // `import FILE` alone writes FILE.sbt, which is fine.
  Result ok = RunTracesmith("import " + log);
  ASSERT_EQ(ok.status, 0) << ok.out;
  EXPECT_EQ(ReadOrMissing(log), *bytes);
}

// Directories and FIFOs are refused, never removed or written through (the
// SQLite exporter used to delete whatever was at the output path).
TEST_F(OutputSafetyTest, ExportRefusesWhatIsNotARegularFile) {
  ASSERT_EQ(::mkdir((dir_ / "empty_dir").c_str(), 0755), 0);
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
  for (const char* format : {"sqlite", "perfetto", "json", "csv", "dot"}) {
    Result r = RunTracesmith("export " + trace_ + " -f " + format + " -o " + (dir_ / "empty_dir"));
    EXPECT_EQ(r.status, 1) << format << ": " << r.out;
    EXPECT_NE(r.out.find("is a directory: refusing to replace it"), std::string::npos) << r.out;
  }
  // Only SQLite here: the other formats' old code blocked opening a FIFO.
  Result fifo = RunTracesmith("export " + trace_ + " -f sqlite -o " + (dir_ / "fifo"));
  EXPECT_EQ(fifo.status, 1) << fifo.out;
  EXPECT_NE(fifo.out.find("is a FIFO"), std::string::npos) << fifo.out;
  Result import = RunTracesmith("import " + trace_ + " -o " + (dir_ / "empty_dir"));
  EXPECT_EQ(import.status, 1) << import.out;
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "empty_dir").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  ASSERT_EQ(::stat((dir_ / "fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(dir_.List(), (std::vector<std::string>{"a.sbt", "empty_dir", "fifo"}));
}

// A write that fails part-way (here the file size limit, as a full disk
// would) leaves the previous output as it was and no partial file.
TEST_F(OutputSafetyTest, AFailedExportLeavesThePreviousOutputAlone) {
  const std::string out = dir_ / "out";
  for (const char* format : {"perfetto", "json", "sqlite", "csv", "dot"}) {
    ASSERT_TRUE(WriteStringToFile(out, "previous export").ok());
    // 8 KiB: the header of every format fits, the events do not.
    Result r = RunTracesmith("export --force " + trace_ + " -f " + format + " -o " + out,
                             "trap '' XFSZ; ulimit -f 8; ");
    EXPECT_NE(r.status, 0) << format << ": " << r.out;
    EXPECT_LT(r.status, 128) << format << " died of a signal: " << r.out;
    EXPECT_EQ(ReadOrMissing(out), "previous export") << format;
    EXPECT_EQ(dir_.List(), (std::vector<std::string>{"a.sbt", "out"})) << format;
  }
  Result ok = RunTracesmith("export --force " + trace_ + " -f csv -o " + out);
  ASSERT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ReadOrMissing(out), "previous export");
  EXPECT_EQ(dir_.List(), (std::vector<std::string>{"a.sbt", "out"}));
}

// A trace with replay payloads (raw chunks, profile --replay-capture) is not
// rewritten in place by symbolize: the rewrite would drop them.
TEST_F(OutputSafetyTest, SymbolizeKeepsReplayPayloads) {
  const std::string path = dir_ / "replay.sbt";
  {
    auto w = format::SbtWriter::Open(path);
    ASSERT_TRUE(w.ok());
    model::KernelEvent k{};
    k.start_ns = 10;
    k.end_ns = 20;
    (*w)->Append(k);
    ASSERT_TRUE((*w)->Flush().ok());
    ASSERT_TRUE((*w)->WriteRawChunk(0x41, std::vector<uint8_t>{1, 2, 3}).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  const std::string before = ReadOrMissing(path);
  Result r = RunTracesmith("symbolize " + path);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("holds replay payloads"), std::string::npos) << r.out;
  EXPECT_EQ(ReadOrMissing(path), before);
}

// One overwrite rule for every command that writes a file (issue #14 item 7):
// an existing output is replaced only with --force, as `profile` does.
TEST_F(OutputSafetyTest, AnExistingOutputIsReplacedOnlyWithForce) {
  const std::string out = dir_ / "out";
  const std::string json = dir_ / "in.json";
  ASSERT_TRUE(WriteStringToFile(json, R"({"traceEvents": []})").ok());
  for (const std::string& cmd :
       {"export " + trace_ + " -f json -o " + out, "export " + trace_ + " -f dot -o " + out,
        "import " + json + " -o " + out, "symbolize " + trace_ + " -o " + out}) {
    ASSERT_TRUE(WriteStringToFile(out, "keep me").ok());
    Result r = RunTracesmith(cmd);
    EXPECT_EQ(r.status, 1) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("exists (use --force to overwrite)"), std::string::npos) << r.out;
    EXPECT_EQ(ReadOrMissing(out), "keep me") << cmd;
    Result forced = RunTracesmith(cmd + " --force");
    EXPECT_EQ(forced.status, 0) << cmd << " --force: " << forced.out;
    EXPECT_NE(ReadOrMissing(out), "keep me") << cmd;
  }
}

// `profile --force` replaces the old trace only when the run wrote a new
// one. TRACESMITH_INJECT_LIB points at any file: these commands never load
// CUDA, so the injection library is never opened.
TEST_F(OutputSafetyTest, ProfileForceKeepsTheOldTraceWhenNothingIsRecorded) {
  const std::string env = "TRACESMITH_INJECT_LIB=" + trace_ + " ";
  const std::string old = dir_ / "old.sbt";
  ASSERT_TRUE(WriteStringToFile(old, original_).ok());
  Result r = RunTracesmith("profile -f -o " + old + " -- true", env);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(ReadOrMissing(old), original_) << r.out;
  EXPECT_EQ(dir_.List(), (std::vector<std::string>{"a.sbt", "old.sbt"})) << r.out;
  // The child's exit code still comes through, and the trace still survives.
  r = RunTracesmith("profile -f -o " + old + " -- sh -c 'exit 7'", env);
  EXPECT_EQ(r.status, 7) << r.out;
  EXPECT_EQ(ReadOrMissing(old), original_);
  // A run that writes the file (as the injection library does) replaces it.
  r = RunTracesmith("profile -f -q -o " + old + " -- sh -c 'echo new > " + old + "'", env);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(ReadOrMissing(old), "new\n");
  EXPECT_EQ(dir_.List(), (std::vector<std::string>{"a.sbt", "old.sbt"}));
  // Without --force nothing runs; a directory is refused even with it.
  r = RunTracesmith("profile -o " + old + " -- true", env);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("file exists (use --force to overwrite)"), std::string::npos) << r.out;
  ASSERT_EQ(::mkdir((dir_ / "d").c_str(), 0755), 0);
  r = RunTracesmith("profile -f -o " + (dir_ / "d") + " -- true", env);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("is a directory: refusing to replace it"), std::string::npos) << r.out;
}

// The output's missing folders are made before the program runs: found
// missing when the trace is written, the run would be lost (a 2-GPU job's
// rank files were, 2026-11-30). A folder that cannot be made stops it first.
TEST_F(OutputSafetyTest, ProfileMakesTheOutputsFolderBeforeTheRun) {
  const std::string env = "TRACESMITH_INJECT_LIB=" + trace_ + " ";
  const std::string out = dir_ / "new/deeper/run.sbt";
  Result r = RunTracesmith("profile -o " + out + " -- sh -c 'echo made > " + out + "'", env);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("made the folder " + (dir_ / "new/deeper")), std::string::npos) << r.out;
  EXPECT_EQ(ReadOrMissing(out), "made\n");
  const std::string blocked = dir_ / "a.sbt/x/run.sbt";  // a.sbt is a file
  r = RunTracesmith("profile -o " + blocked + " -- sh -c 'echo ran > " + (dir_ / "ran") + "'", env);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("cannot make the output's folder"), std::string::npos) << r.out;
  EXPECT_EQ(ReadOrMissing(dir_ / "ran"), "<missing>") << "the program ran";
}

// A footer index with forged row counts (valid checksums) used to end
// `info` and `view` with an uncaught std::length_error.
TEST_F(OutputSafetyTest, ForgedIndexRowCountsDoNotCrashInfoOrView) {
  const std::vector<uint8_t> bytes(original_.begin(), original_.end());
  const std::vector<uint8_t> forged = testing::ForgeIndexRows(bytes, uint64_t{1} << 63);
  ASSERT_FALSE(forged.empty());
  const std::string path = dir_ / "forged.sbt";
  ASSERT_TRUE(WriteStringToFile(path, std::string(forged.begin(), forged.end())).ok());
  for (const char* cmd : {"info", "view --limit 3", "view --stats", "analyze"}) {
    Result r = RunTracesmith(std::string(cmd) + " " + path);
    EXPECT_EQ(r.status, 0) << cmd << ": " << r.out;
    EXPECT_EQ(r.out.find("terminate"), std::string::npos) << cmd << ": " << r.out;
  }
  Result info = RunTracesmith("info " + path);
  EXPECT_NE(info.out.find("  kernel              500\n"), std::string::npos) << info.out;
}

}  // namespace
}  // namespace tracesmith
