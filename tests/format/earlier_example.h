// The shipped example trace (examples/traces/mlp_train.sbt, captured before
// the newest record kinds existed) as a compatibility test reads it: it must
// read clean and hold kernels; the test then checks the new kinds are absent.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "testing/source_paths.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::format {

inline model::Trace ReadEarlierExample() {
  ReadReport report;
  auto trace = ReadTraceFile(::tracesmith::testing::ExampleTracePath("mlp_train.sbt"), &report);
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  if (!trace.ok()) return {};
  EXPECT_TRUE(report.clean()) << report.Describe();
  EXPECT_GT(trace->Rows<model::KernelEvent>().size(), 0u);
  return std::move(*trace);
}

}  // namespace tracesmith::format
