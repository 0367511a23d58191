// include/tracesmith/app/app.h in a program with no capture library: it resolves
// nothing, and every call is a no-op (nothing linked, nothing loaded).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "tracesmith/app/app.h"

namespace {

TEST(AppApiAbsent, EveryCallIsANoOp) {
  unsetenv("CUDA_INJECTION64_PATH");
  unsetenv("TRACESMITH_INJECT_LIB");
  EXPECT_EQ(ts_app_api(), nullptr);
  EXPECT_EQ(ts_app_capturing(), nullptr);
  EXPECT_EQ(ts_app_intern("loss"), 0u);
  ts_app_counter(1, 1.0);
  ts_app_instant(1, 0);
  EXPECT_EQ(ts_app_range_begin(), 0u);
  ts_app_range_end(1, 0, 123);
  TRACESMITH_COUNTER("loss", 1.0);
  TRACESMITH_INSTANT("checkpoint");
  { TRACESMITH_RANGE("eval"); }
}

// Another tool's injection library is never loaded by the header.
TEST(AppApiAbsent, OnlyLoadsTraceSmithLibraries) {
  EXPECT_EQ(ts_app__is_ours("/opt/nsight/libToolsInjection64.so"), 0);
  EXPECT_EQ(ts_app__is_ours("/x/lib/libtracesmith-inject.so"), 1);
  EXPECT_EQ(ts_app__is_ours("/tracesmith/lib/libother.so"), 0);
  EXPECT_EQ(ts_app_load("/nonexistent/libtracesmith-inject.so"), nullptr);
}

}  // namespace
