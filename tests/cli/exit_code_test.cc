// Every StatusCode's exit code: whose fault a failure is.
#include "cli/exit_codes.h"

#include <gtest/gtest.h>

#include "tracesmith/replay/gpu_replayer.h"

namespace tracesmith::cli {
namespace {

TEST(ExitCodeTest, EachKindOfFailureHasItsCode) {
  EXPECT_EQ(ExitCodeFor(StatusCode::kInvalidArgument), 1);
  EXPECT_EQ(ExitCodeFor(StatusCode::kNotFound), 1);
  EXPECT_EQ(ExitCodeFor(StatusCode::kDataLoss), 1);
  EXPECT_EQ(ExitCodeFor(StatusCode::kUnimplemented), 1);
  EXPECT_EQ(ExitCodeFor(StatusCode::kFailedPrecondition), 1);
  EXPECT_EQ(ExitCodeFor(StatusCode::kIoError), 2);
  EXPECT_EQ(ExitCodeFor(StatusCode::kInternal), 3);
  // A failed CUDA or CUPTI call is not a TraceSmith bug (3), nor replay's
  // "an output differed" (4).
  EXPECT_EQ(ExitCodeFor(StatusCode::kGpuError), 5);
  EXPECT_EQ(ExitCodeFor(GpuCallError("CUDA", 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory",
                                     "cuMemAlloc(&p, n)", "vmm.cc", 1)
                            .code()),
            kExitGpuError);
  EXPECT_EQ(kExitGpuError, replay::kReplayGpuError);
  EXPECT_NE(kExitGpuError, replay::kReplayDiffers);
}

TEST(ExitCodeTest, HelpSaysEveryCode) {
  const std::string help = kExitHelp;
  for (const char* code : {"0 success", "1 bad input", "2 an I/O error", "3 a bug", "5 a CUDA"})
    EXPECT_NE(help.find(code), std::string::npos) << code;
}

}  // namespace
}  // namespace tracesmith::cli
