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

}  // namespace
}  // namespace tracesmith
