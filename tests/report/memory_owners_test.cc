// Owners' live bytes over time (report/memory_owners.h) on a hand-made trace.
#include "tracesmith/report/memory_owners.h"

#include <gtest/gtest.h>

#include "analysis/test_traces.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::report {
namespace {

model::MemoryEvent Ev(uint64_t ts, uint8_t op, uint64_t address, uint64_t bytes, uint32_t stack) {
  model::MemoryEvent e{};
  e.ts_ns = ts;
  e.op = op;
  e.address = address;
  e.bytes = bytes;
  e.pid = 1;
  e.memory_kind = model::kMemDevice;
  e.stack_id = stack;
  return e;
}

// Bins of [0, 100] in 4: ts 0-25, 26-50, 51-75, 76-100 (ts * 4 / 101).
TEST(MemoryOwnersTest, OwnersLiveBytesPerBinIncludeWhatIsCarriedIn) {
  analysis::testing::StackMaker s;
  const uint32_t cudart = s.Module("/usr/lib/libcudart.so.13");
  const uint32_t c10 = s.Module("/torch/lib/libc10_cuda.so");
  const uint32_t nccl = s.Module("/nvidia/nccl/lib/libnccl.so.2");
  const uint32_t torch_stack = s.Stack({s.Native(cudart, "cudaMalloc"), s.Native(c10, "malloc")});
  const uint32_t nccl_stack = s.Stack({s.Native(cudart, "cudaMalloc"), s.Native(nccl, "init")});
  auto& rows = s.b.trace().Rows<model::MemoryEvent>();
  rows.push_back(Ev(10, model::kMemoryAlloc, 0x1000, 100, torch_stack));
  rows.push_back(Ev(20, model::kMemoryAlloc, 0x2000, 50, nccl_stack));
  rows.push_back(Ev(30, model::kMemoryAlloc, 0x3000, 30, torch_stack));
  rows.push_back(Ev(40, model::kMemoryFree, 0x3000, 0, 0));
  rows.push_back(Ev(60, model::kMemoryFree, 0x1000, 0, 0));
  rows.push_back(Ev(100, model::kMemoryFree, 0x2000, 0, 0));
  tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(s.b.trace(), path.path()).ok());

  auto series = ComputeOwnerSeries(path.path(), s.b.trace(), 0, 100, 4);
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 1u);
  const auto& owners = (*series)[0].owners;
  ASSERT_EQ(owners.size(), 2u);
  EXPECT_EQ(owners[0].owner, "PyTorch caching allocator");
  EXPECT_EQ(owners[0].peak_bytes, 130u);
  EXPECT_EQ(owners[0].bins, (std::vector<uint64_t>{100, 130, 100, 0}));
  EXPECT_EQ(owners[1].owner, "NCCL");
  EXPECT_EQ(owners[1].bins, (std::vector<uint64_t>{50, 50, 50, 50}));

  auto top = ComputeOwnerSeries(path.path(), s.b.trace(), 0, 100, 4, 1);
  ASSERT_TRUE(top.ok());
  EXPECT_EQ((*top)[0].owners.size(), 1u);
}

}  // namespace
}  // namespace tracesmith::report
