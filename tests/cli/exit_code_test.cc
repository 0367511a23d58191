// Every StatusCode's exit code: whose fault a failure is.
#include "cli/exit_codes.h"

#include <gtest/gtest.h>

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
}

// --help names the exit code of every StatusCode as "N " after "Exit status:"
// or a comma: a new code, or a changed mapping, must be said there too.
TEST(ExitCodeTest, HelpSaysTheCodeOfEveryStatus) {
  const std::string help = kExitHelp;
  for (int c = int(StatusCode::kOk); c <= int(StatusCode::kGpuError); ++c) {
    const std::string code = std::to_string(ExitCodeFor(StatusCode(c))) + " ";
    EXPECT_TRUE(help.find(": " + code) != std::string::npos ||
                help.find(", " + code) != std::string::npos)
        << StatusCodeName(StatusCode(c)) << " exits " << code;
  }
}

}  // namespace
}  // namespace tracesmith::cli
