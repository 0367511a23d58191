// torch.profiler's [memory] events (profile_memory=True) imported as the
// memory model's allocations and frees (issue #16), with the call stack torch's
// trace tells: the allocator's frame, then the ranges open on the event's
// thread (ops, annotations, with_stack's Python frames).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "import_data.h"
#include "tracesmith/import/import.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::importer {
namespace {

using model::MemoryEvent;

// A stack as "module:function" / "file:line function" strings, leaf first.
std::vector<std::string> Frames(const model::Trace& t, uint32_t stack) {
  std::vector<std::string> out;
  for (uint32_t id : model::StackFrames(t, stack)) {
    const model::Frame& f = t.Rows<model::Frame>()[id - 1];
    if (f.kind == model::kFramePython) {
      out.push_back(std::string(t.strings.Get(f.file_id)) + ":" + std::to_string(f.line) + " " +
                    std::string(t.strings.Get(f.function_id)));
      continue;
    }
    std::string module;
    for (const model::Mapping& m : t.Rows<model::Mapping>())
      if (m.mapping_id == f.mapping_id) module = t.strings.Get(m.path_id);
    out.push_back(module + ":" + std::string(t.strings.Get(f.function_id)));
  }
  return out;
}

// tests/import/data/torch_memory_small.json, written by hand (its numbers
// below): on thread 7, under "train.py(36): step" (under "<module>"), 1 MiB
// inside aten::empty, 4 MiB outside any op, the 1 MiB freed, 12000 B of CPU
// memory; on thread 8 (the autograd engine's) 2 MiB inside aten::mm inside
// "autograd::engine::evaluate_function: MmBackward0"; the 4 MiB freed; a free
// of memory from before the trace (1 MiB: torch's Total Allocated is 1 MiB
// above what the events add up to, 7 MiB at most; Total Reserved 4 then 8
// MiB); then a Device Type 13 event and a 0-byte one (skipped) and an instant
// named [memory] without torch's args (a marker).
TEST(KinetoMemory, MemoryEventsAreAllocationsAndFreesWithTheirStacks) {
  ImportStats stats;
  auto t = ImportKinetoJson(ReadData("torch_memory_small.json"), &stats);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const auto& rows = t->Rows<MemoryEvent>();
  ASSERT_EQ(rows.size(), 7u);
  struct Want {
    uint64_t ts_us;
    uint8_t op;
    uint64_t address, bytes;
    uint8_t kind;
  };
  const uint64_t base = 1700000000000000000ull;
  const Want want[] = {
      {21, model::kMemoryAlloc, 139900000000000, 1 << 20, model::kMemDevice},
      {30, model::kMemoryAlloc, 139900002097152, 4 << 20, model::kMemDevice},
      {40, model::kMemoryFree, 139900000000000, 1 << 20, model::kMemDevice},
      {50, model::kMemoryAlloc, 1154768064, 12000, model::kMemPageable},
      {60, model::kMemoryAlloc, 139900008388608, 2 << 20, model::kMemDevice},
      {80, model::kMemoryFree, 139900002097152, 4 << 20, model::kMemDevice},
      {90, model::kMemoryFree, 139900016777216, 1 << 20, model::kMemDevice},
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rows[i].ts_ns, base + want[i].ts_us * 1000);
    EXPECT_EQ(rows[i].op, want[i].op);
    EXPECT_EQ(rows[i].address, want[i].address);
    EXPECT_EQ(rows[i].bytes, want[i].bytes);
    EXPECT_EQ(rows[i].memory_kind, want[i].kind);
    EXPECT_EQ(rows[i].pid, 7u);
    EXPECT_EQ(rows[i].device_id, 0u);
    EXPECT_NE(rows[i].stack_id, 0u);
  }
  using V = std::vector<std::string>;
  EXPECT_EQ(Frames(*t, rows[0].stack_id),
            (V{"libc10_cuda.so:", ":aten::empty", "train.py:36 step", "train.py:10 <module>"}));
  EXPECT_EQ(Frames(*t, rows[1].stack_id),
            (V{"libc10_cuda.so:", "train.py:36 step", "train.py:10 <module>"}));
  EXPECT_EQ(Frames(*t, rows[3].stack_id),
            (V{"libc10.so:", ":aten::empty", "train.py:36 step", "train.py:10 <module>"}));
  EXPECT_EQ(Frames(*t, rows[4].stack_id), (V{"libc10_cuda.so:", ":aten::mm",
                                             ":autograd::engine::evaluate_function: MmBackward0"}));
  // torch's totals of CUDA memory as counters, when they change: Total
  // Allocated at each of the 6 CUDA events, Total Reserved at the first two.
  std::vector<std::pair<std::string, double>> counters;
  for (const model::CounterEvent& c : t->Rows<model::CounterEvent>()) {
    EXPECT_EQ(c.pid, 7u);
    EXPECT_EQ(c.device_id, 0u);
    counters.push_back({std::string(t->strings.Get(c.name_id)), c.value});
  }
  const std::string a = model::kTorchAllocatedCounter, r = model::kTorchReservedCounter;
  const double mib = 1 << 20;
  EXPECT_EQ(counters, (std::vector<std::pair<std::string, double>>{{a, 2 * mib},
                                                                   {r, 4 * mib},
                                                                   {a, 6 * mib},
                                                                   {r, 8 * mib},
                                                                   {a, 5 * mib},
                                                                   {a, 7 * mib},
                                                                   {a, 3 * mib},
                                                                   {a, 2 * mib}}));
  EXPECT_EQ(t->Rows<model::CounterEvent>()[0].ts_ns, base + 21000);
  // The Device Type 13 and 0-byte events skipped; the one without torch's
  // args stays a marker, as any instant.
  EXPECT_EQ(stats.skipped, 2u);
  ASSERT_EQ(t->Rows<model::NvtxMarkerEvent>().size(), 1u);
  EXPECT_EQ(t->strings.Get(t->Rows<model::NvtxMarkerEvent>()[0].name_id), "[memory]");
  // The same, streamed in small pieces.
  const std::string text = ReadData("torch_memory_small.json");
  size_t at = 0;
  auto streamed = ImportKinetoJsonStream([&](char* buf, size_t cap) {
    const size_t n = std::min({size_t{7}, cap, text.size() - at});
    std::copy_n(text.data() + at, n, buf);
    at += n;
    return n;
  });
  ASSERT_TRUE(streamed.ok());
  ASSERT_EQ(streamed->Rows<MemoryEvent>().size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(Frames(*streamed, streamed->Rows<MemoryEvent>()[i].stack_id),
              Frames(*t, rows[i].stack_id));
}

// A real torch.profiler trace's [memory] events (tests/export/data: torch
// 2.11, H100; a 512x512 randn, a matmul, a del and a CPU torch.empty): 1 MiB,
// 1 MiB and 32 MiB of CUDA memory, the first 1 MiB freed, 12000 B of CPU
// memory; nothing else in that file, so each stack is the allocator's frame.
TEST(KinetoMemory, ARealTorchProfilerTracesMemoryEvents) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  auto text = ReadFileToString(std::string(src ? src : ".") +
                               "/tests/export/data/torch_profiler_memory.json");
  ASSERT_TRUE(text.ok());
  auto t = ImportKinetoJson(*text);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const auto& rows = t->Rows<MemoryEvent>();
  ASSERT_EQ(rows.size(), 5u);
  uint64_t live = 0, peak = 0;
  for (const MemoryEvent& m : rows) {
    if (m.memory_kind != model::kMemDevice) continue;
    live = m.op == model::kMemoryAlloc ? live + m.bytes : live - m.bytes;
    peak = std::max(peak, live);
  }
  EXPECT_EQ(peak, 34u << 20);
  EXPECT_EQ(live, 33u << 20);
  EXPECT_EQ(rows[3].op, model::kMemoryFree);
  EXPECT_EQ(rows[3].address, rows[0].address);
  EXPECT_EQ(rows[4].memory_kind, model::kMemPageable);
  EXPECT_EQ(rows[4].bytes, 12000u);
  // ts 4705509069784.101 us from baseTimeNanoseconds 1790857026000000000.
  EXPECT_EQ(rows[0].ts_ns, 1790857026000000000ull + 4705509069784101ull);
  EXPECT_EQ(Frames(*t, rows[0].stack_id), std::vector<std::string>{"libc10_cuda.so:"});
  EXPECT_TRUE(t->Rows<model::NvtxMarkerEvent>().empty());
}

}  // namespace
}  // namespace tracesmith::importer
