// `tracesmith profile` on a machine without a GPU (CI): the command runs,
// its exit code or signal is passed through, and no trace is claimed.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "testing/build_paths.h"
#include "testing/temp_file.h"

namespace {

struct Result {
  int status = 0;
  std::string output;
};

Result RunShell(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

const std::string kTool = ::tracesmith::testing::TracesmithBin();

TEST(ProfileCli, PassesExitCodeAndReportsNoGpuActivity) {
  tracesmith::testing::TempPath out;
  Result r =
      RunShell(kTool + " profile -o " + out.path() + " -- sh -c 'echo child-output; exit 3'");
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 3) << r.output;
  EXPECT_NE(r.output.find("child-output"), std::string::npos);
  EXPECT_NE(r.output.find("no GPU activity was seen"), std::string::npos) << r.output;
}

// Options reach the child only from the command line: a stale TRACESMITH_*
// option variable in the user's environment is cleared (issue #21, item 10).
TEST(ProfileCli, StaleOptionVariablesDoNotReachTheChild) {
  tracesmith::testing::TempPath out;
  Result r = RunShell(
      "TRACESMITH_DURATION=5000000 TRACESMITH_REPLAY_CAPTURE=all " + kTool + " profile -q -o " +
      out.path() +
      " -- sh -c 'echo \"duration=[$TRACESMITH_DURATION] replay=[$TRACESMITH_REPLAY_CAPTURE] "
      "kinds=[$TRACESMITH_KINDS]\"'");
  ASSERT_TRUE(WIFEXITED(r.status)) << r.output;
  EXPECT_NE(r.output.find("duration=[] replay=[]"), std::string::npos) << r.output;
  // The options the command line did give still arrive (when the injection
  // library is built, which sets them).
  if (r.output.find("kinds=[]") == std::string::npos) {
    EXPECT_NE(r.output.find("kinds=[kernel,"), std::string::npos) << r.output;
  }
}

// A value the injection library would refuse inside the child (leaving the
// program unprofiled) is refused by the command line first.
TEST(ProfileCli, ValuesTheCaptureWouldRefuseAreRefusedUpFront) {
  Result r = RunShell(kTool + " profile --buffer-mb 99999999 -- sh -c 'echo ran'");
  EXPECT_NE(WEXITSTATUS(r.status), 0) << r.output;
  EXPECT_EQ(r.output.find("ran"), std::string::npos) << "the command ran: " << r.output;
  EXPECT_NE(r.output.find("--buffer-mb"), std::string::npos) << r.output;
  // A GPU instruction sampling period out of range: refused, the command not run.
  r = RunShell(kTool + " profile --pc-sampling-period 40 -- sh -c 'echo ran'");
  EXPECT_EQ(WEXITSTATUS(r.status), 1) << r.output;
  EXPECT_EQ(r.output.find("ran"), std::string::npos) << "the command ran: " << r.output;
  EXPECT_NE(r.output.find("tracesmith: error: --pc-sampling: '40' is not a period"),
            std::string::npos)
      << r.output;
  // --pc-sampling reaches the child as its period (15 by default).
  tracesmith::testing::TempPath out;
  r = RunShell(kTool + " profile -q --pc-sampling -o " + out.path() +
               " -- sh -c "
               "'echo \"pcs=[$TRACESMITH_PC_SAMPLING]\"'");
  // (Without the injection library built, no option reaches the child.)
  if (r.output.find("pcs=[]") == std::string::npos) {
    EXPECT_NE(r.output.find("pcs=[15]"), std::string::npos) << r.output;
  }
}

// --sass-counts: refused with instruction sampling (one message, the command
// not run); alone it reaches the child.
TEST(ProfileCli, SassCountsRefusedWithSamplingAndPassedOn) {
  for (const char* sampling : {"--pc-sampling", "--kernel-timeout 30s"}) {
    Result r = RunShell(kTool + " profile --sass-counts " + sampling + " -- sh -c 'echo ran'");
    EXPECT_EQ(WEXITSTATUS(r.status), 1) << r.output;
    EXPECT_EQ(r.output.find("ran"), std::string::npos) << "the command ran: " << r.output;
    EXPECT_NE(r.output.find("--sass-counts cannot be combined with --pc-sampling or "
                            "--kernel-timeout"),
              std::string::npos)
        << r.output;
  }
  tracesmith::testing::TempPath out;
  Result r = RunShell(kTool + " profile -q --sass-counts -o " + out.path() +
                      " -- sh -c 'echo \"sass=[$TRACESMITH_SASS_COUNTS]\"'");
  if (r.output.find("sass=[]") == std::string::npos) {  // (the injection library built)
    EXPECT_NE(r.output.find("sass=[1]"), std::string::npos) << r.output;
  }
}

TEST(ProfileCli, ChildKilledBySignalEndsTheSameWay) {
  Result r = RunShell(kTool + " profile -q -- sh -c 'kill -TERM $$'");
  ASSERT_TRUE(WIFEXITED(r.status));  // popen's shell reports the signal as 128+n
  EXPECT_EQ(WEXITSTATUS(r.status), 128 + 15) << r.output;
}

TEST(ProfileCli, MissingCommandAndExistingOutputAreErrors) {
  Result none = RunShell(kTool + " profile");
  EXPECT_NE(WEXITSTATUS(none.status), 0);
  EXPECT_NE(none.output.find("no command given"), std::string::npos) << none.output;
  tracesmith::testing::TempPath out;
  FILE* f = fopen(out.path().c_str(), "w");
  fputs("x", f);
  fclose(f);
  Result exists = RunShell(kTool + " profile -o " + out.path() + " -- true");
  EXPECT_EQ(WEXITSTATUS(exists.status), 1);
  EXPECT_NE(exists.output.find("--force"), std::string::npos) << exists.output;
  Result forced = RunShell(kTool + " profile -f -o " + out.path() + " -- true");
  EXPECT_EQ(WEXITSTATUS(forced.status), 0) << forced.output;
}

// `record` without -o is refused for that reason (a nonzero exit alone would
// also pass for an unknown subcommand or a crash).
TEST(ProfileCli, RecordNeedsOutput) {
  Result r = RunShell(kTool + " record -- true");
  ASSERT_TRUE(WIFEXITED(r.status)) << r.output;
  EXPECT_EQ(WEXITSTATUS(r.status), 1) << r.output;
  EXPECT_NE(r.output.find("tracesmith: error: --output is required"), std::string::npos)
      << r.output;
}

TEST(ProfileCli, StdinPassesThrough) {
  Result r = RunShell("echo from-stdin | " + kTool + " profile -q -- cat");
  EXPECT_EQ(WEXITSTATUS(r.status), 0);
  EXPECT_NE(r.output.find("from-stdin"), std::string::npos) << r.output;
}

TEST(DevicesCli, SaysClearlyWhenThereIsNoDriverOrGpu) {
  Result r = RunShell(kTool + " devices");
  if (WEXITSTATUS(r.status) == 0) {
    EXPECT_NE(r.output.find("GPU 0:"), std::string::npos) << r.output;
  } else {
    EXPECT_TRUE(r.output.find("no NVIDIA driver") != std::string::npos ||
                r.output.find("no usable GPU") != std::string::npos ||
                r.output.find("no GPU") != std::string::npos)
        << r.output;
  }
}

}  // namespace
