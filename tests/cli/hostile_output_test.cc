// The hostile-input suite's output paths (issue #21, Tests): every command
// that writes a file, pointed at its own input, a directory, a FIFO, a
// device (/dev/full, /dev/null), a read-only directory and a full disk,
// fails with a message and leaves every pre-existing file as it was (bytes
// and inode) and no temporary file behind. The read-only and full-disk cases
// mount a tmpfs in a user and mount namespace (`unshare -rm`), so they need
// no root and run as root too; they are skipped where namespaces are not
// available. Devices are bind-mounted onto a file in the namespace: a
// command that tried to replace one would get EBUSY, never the real node.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

using testing::TempDir;

struct Snapshot {
  ino_t ino = 0;
  std::string bytes;
  bool operator==(const Snapshot& o) const { return ino == o.ino && bytes == o.bytes; }
};
Snapshot Take(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {0, "<missing>"};
  return {st.st_ino, ReadOrMissing(path)};
}

class HostileOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model::SyntheticOptions o;
    o.kernels = 2000;
    ASSERT_TRUE(format::WriteTraceFile(model::MakeSyntheticTrace(o), trace_).ok());
    Result j = RunTracesmith("export -q " + trace_ + " -f json -o " + json_);
    ASSERT_EQ(j.status, 0) << j.out;
  }
  // Every writing command with its output OUT (and --force: replacing an
  // existing file is allowed, so only the hostile target stops it).
  std::vector<std::string> Writers() const {
    std::vector<std::string> w;
    for (const char* f : {"perfetto", "json", "sqlite", "csv", "dot"})
      w.push_back("export " + trace_ + " -f " + f + " --force -o OUT");
    w.push_back("export " + trace_ + " -f json --gzip --force -o OUT");
    w.push_back("import " + json_ + " --force -o OUT");
    w.push_back("symbolize " + trace_ + " --force -o OUT");
    return w;
  }
  static std::string With(std::string command, const std::string& out) {
    command.replace(command.find("OUT"), 3, out);
    return command;
  }
  // Runs `script` in a new user and mount namespace (mapped root); false
  // when namespaces are not available here.
  bool InNamespace(const std::string& script, std::string* output) {
    const std::string path = dir_ / "case.sh";
    EXPECT_TRUE(WriteStringToFile(path, script).ok());
    output->clear();
    FILE* p = popen(("unshare -rm sh " + path + " 2>&1").c_str(), "r");
    if (p == nullptr) return false;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
    pclose(p);
    return output->find("NAMESPACE_OK") != std::string::npos;
  }

  TempDir dir_;
  const std::string trace_ = dir_ / "a.sbt";
  const std::string json_ = dir_ / "a.json";
};

TEST_F(HostileOutputTest, TheInputADirectoryAndAFifoSurvive) {
  const std::string dir = dir_ / "d", fifo = dir_ / "fifo";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_TRUE(WriteStringToFile(dir + "/inside", "inside").ok());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const Snapshot trace = Take(trace_), json = Take(json_);
  const std::vector<std::string> listing = dir_.List();
  for (const std::string& command : Writers()) {
    const std::string input = command.rfind("import", 0) == 0 ? json_ : trace_;
    for (const std::string& out : {input, dir, fifo}) {
      SCOPED_TRACE(With(command, out));
      Result r = RunTracesmith(With(command, out));
      EXPECT_EQ(r.status, 1) << r.out;
      EXPECT_NE(r.out.find("tracesmith: error: "), std::string::npos) << r.out;
      EXPECT_EQ(Take(trace_), trace);
      EXPECT_EQ(Take(json_), json);
      EXPECT_EQ(ReadOrMissing(dir + "/inside"), "inside");
      struct stat st {};
      EXPECT_TRUE(::stat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode));
      EXPECT_EQ(dir_.List(), listing);
    }
  }
}

// Each writer onto a full tmpfs (one page left: no output fits), a
// read-only one, and /dev/full and /dev/null bind-mounted onto files.
TEST_F(HostileOutputTest, FullDiskReadOnlyDirectoryAndDevices) {
  const std::string mnt = dir_ / "mnt", ro = dir_ / "ro";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(ro.c_str(), 0755), 0);
  int cases = 0;
  for (const std::string& command : Writers()) {
    for (const char* target : {"full", "readonly", "dev_full", "dev_null"}) {
      SCOPED_TRACE(With(command, target));
      const std::string t = target;
      std::string setup;
      std::string out;
      if (t == "full") {
        // Two pages: one for the previous output, one free.
        setup = "mount -t tmpfs -o size=8k tmpfs " + mnt + " || exit 77\n" + "printf previous > " +
                mnt + "/out\n";
        out = mnt + "/out";
      } else if (t == "readonly") {
        setup = "mount -t tmpfs -o size=1m tmpfs " + ro + " || exit 77\n" + "printf previous > " +
                ro + "/out\n" + "mount -o remount,ro " + ro + " || exit 77\n";
        out = ro + "/out";
      } else {
        const std::string dev = t == "dev_full" ? "/dev/full" : "/dev/null";
        setup = "mount -t tmpfs -o size=1m tmpfs " + mnt + " || exit 77\n" + "touch " + mnt +
                "/out\n" + "mount --bind " + dev + " " + mnt + "/out || exit 77\n";
        out = mnt + "/out";
      }
      const std::string dir = out.substr(0, out.rfind('/'));
      const std::string script =
          setup + "echo NAMESPACE_OK\n" + std::string(::tracesmith::testing::TracesmithBin()) +
          " " + With(command, out) + " 2>&1\n" + "echo \"RC=$?\"\n" + "echo \"LIST=$(ls -A " + dir +
          " | tr '\\n' ' ')\"\n" +
          (t.rfind("dev", 0) == 0 ? "test -c " + out + " && echo STILL_A_DEVICE\n"
                                  : "echo \"CONTENT=$(cat " + out + ")\"\n");
      std::string output;
      if (!InNamespace(script, &output)) {
        GTEST_SKIP() << "no user/mount namespace here (unshare -rm): " << output;
      }
      ++cases;
      EXPECT_NE(output.find("tracesmith: error: "), std::string::npos) << output;
      EXPECT_TRUE(output.find("RC=1\n") != std::string::npos ||
                  output.find("RC=2\n") != std::string::npos)
          << output;
      EXPECT_NE(output.find("LIST=out \n"), std::string::npos) << "left behind:\n" << output;
      if (t.rfind("dev", 0) == 0)
        EXPECT_NE(output.find("STILL_A_DEVICE"), std::string::npos) << output;
      else
        EXPECT_NE(output.find("CONTENT=previous\n"), std::string::npos) << output;
    }
  }
  EXPECT_EQ(cases, 32);
  // The real devices, untouched.
  for (const char* dev : {"/dev/full", "/dev/null"}) {
    struct stat st {};
    EXPECT_TRUE(::stat(dev, &st) == 0 && S_ISCHR(st.st_mode)) << dev;
  }
}

}  // namespace
}  // namespace tracesmith
