#include "tracesmith/base/status.h"

#include <gtest/gtest.h>

namespace tracesmith {
namespace {

StatusOr<int> Half(int v) {
  if (v % 2) return InvalidArgument(StrFormat("%d is odd", v));
  return v / 2;
}

Status Quarter(int v, int* out) {
  ASSIGN_OR_RETURN(int h, Half(v));
  ASSIGN_OR_RETURN(*out, Half(h));
  return OkStatus();
}

TEST(StatusTest, PropagatesFirstError) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: 3 is odd");
}

// CU_CALL and CUPTI_CALL (tracesmith/cuda/call.h) build their Status here:
// one message for both, naming the error's name and description.
TEST(StatusTest, GpuCallErrorNamesTheCallTheErrorAndWhere) {
  Status s = GpuCallError("CUDA", 700, "CUDA_ERROR_ILLEGAL_ADDRESS",
                          "an illegal memory access was encountered", "cuCtxSynchronize()",
                          "gpu_replayer.cc", 312);
  EXPECT_EQ(s.code(), StatusCode::kGpuError);
  EXPECT_EQ(s.message(),
            "cuCtxSynchronize() failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was "
            "encountered) at gpu_replayer.cc:312");
  EXPECT_EQ(s.ToString().rfind("GPU_ERROR: ", 0), 0u);

  Status cupti = GpuCallError("CUPTI", 39, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
                              "another subscriber is active", "cuptiSubscribe", "engine.cc", 9);
  EXPECT_EQ(cupti.code(), StatusCode::kGpuError);
  EXPECT_EQ(cupti.message(),
            "cuptiSubscribe failed: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another "
            "subscriber is active) at engine.cc:9");

  // A code the library has no name or text for (a newer driver's).
  EXPECT_EQ(GpuCallError("CUDA", 999, nullptr, nullptr, "cuInit(0)", "x.cc", 1).message(),
            "cuInit(0) failed: CUDA error 999 (no description) at x.cc:1");
  EXPECT_EQ(GpuCallError("CUPTI", 7, "", "", "cuptiFoo()", "x.cc", 2).message(),
            "cuptiFoo() failed: CUPTI error 7 (no description) at x.cc:2");
}

TEST(StatusTest, GpuErrorIsNotInternal) {
  EXPECT_EQ(GpuError("x").code(), StatusCode::kGpuError);
  EXPECT_STREQ(StatusCodeName(StatusCode::kGpuError), "GPU_ERROR");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInternal), "INTERNAL");
}

}  // namespace
}  // namespace tracesmith
