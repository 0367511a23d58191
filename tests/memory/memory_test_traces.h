// What the memory tests share (memory_model_test.cc, memory_steps_test.cc): memory events,
// stacks with known owners, and a report built from a trace written to a file.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "analysis/test_traces.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

inline constexpr uint64_t kMiB = 1 << 20;

inline model::MemoryEvent Ev(uint64_t ts, uint8_t op, uint64_t address, uint64_t bytes,
                             uint32_t pid = 1, uint32_t device = 0,
                             uint8_t kind = model::kMemDevice, uint32_t stack = 0) {
  model::MemoryEvent e{};
  e.ts_ns = ts;
  e.op = op;
  e.address = address;
  e.bytes = bytes;
  e.pid = pid;
  e.device_id = device;
  e.memory_kind = kind;
  e.stack_id = stack;
  return e;
}

// Stacks whose owners are known: frames in the CUDA runtime, then a library.
struct OwnerStacks : testing::StackMaker {
  const uint32_t cudart = Module("/usr/lib/libcudart.so.13");
  const uint32_t libc = Module("/lib/x86_64-linux-gnu/libc.so.6");
  const uint32_t c10 = Module("/site-packages/torch/lib/libc10_cuda.so");
  const uint32_t nccl = Module("/site-packages/nvidia/nccl/lib/libnccl.so.2");
  const uint32_t cublas = Module("/usr/lib/libcublasLt.so.13");
  const uint32_t python = Module("/usr/bin/python3.12");
  const uint32_t prog = Module("/home/u/memory_kinds");
};

inline MemoryReport Build(const model::Trace& t, const MemoryReportOptions& o,
                          uint32_t rows_per_chunk) {
  tracesmith::testing::TempPath path;
  EXPECT_TRUE(format::WriteTraceFile(t, path.path(), {.rows_per_chunk = rows_per_chunk}).ok());
  MemoryReport r;
  Status st = BuildMemoryReport(path.path(), o, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return r;
}

}  // namespace tracesmith::analysis
