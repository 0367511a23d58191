// GPU tests of what the memory profiler needs from the capture (issue #16):
// every allocation row carries the host stack of the call that made it, the
// VMM calls (no MEMORY2 record) make rows of their own from driver
// callbacks, and "device memory used (cuMemGetInfo)" counters say what was
// in use before the program's first allocation. Program:
// gpu/programs/memory_kinds.cu. Run by scripts/gpu-check.sh; "skipped (no
// GPU)" elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "capture/gpu_profile.h"
#include "capture/trace_checks.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/symbolize/symbolizer.h"

namespace tracesmith::capture {
namespace {

using testing::Str;

using testing::Describe;

// A number the program printed after `key` ("memory_kinds: granularity 2097152").
uint64_t Printed(const std::string& output, const std::string& key) {
  size_t at = output.find(key);
  return at == std::string::npos ? 0 : std::strtoull(output.c_str() + at + key.size(), nullptr, 0);
}

// What a memory row is, in the program's terms: op, memory kind, async.
using RowKind = std::tuple<int, int, int>;

// The function of memory_kinds.cu that makes each kind of row.
const std::map<RowKind, std::string>& Callers() {
  static const std::map<RowKind, std::string> m = {
      {{model::kMemoryAlloc, 3, 0}, "ts_cuda_malloc"},
      {{model::kMemoryFree, 3, 0}, "ts_cuda_free"},
      {{model::kMemoryAlloc, 3, 1}, "ts_malloc_async"},
      {{model::kMemoryFree, 3, 1}, "ts_free_async"},
      {{model::kMemoryAlloc, 5, 0}, "ts_malloc_managed"},
      {{model::kMemoryFree, 5, 0}, "ts_free_managed"},
      {{model::kMemoryAlloc, 2, 0}, "ts_host_alloc"},
      {{model::kMemoryFree, 2, 0}, "ts_free_host"},
      {{model::kMemoryVmmCreate, 3, 0}, "ts_vmm_create"},
      {{model::kMemoryVmmRelease, 3, 0}, "ts_vmm_release"},
      {{model::kMemoryVmmMap, 3, 0}, "ts_vmm_map"},
      {{model::kMemoryVmmUnmap, 3, 0}, "ts_vmm_unmap"},
      {{model::kMemoryVmmReserve, 3, 0}, "ts_vmm_reserve"},
      {{model::kMemoryVmmUnreserve, 3, 0}, "ts_vmm_unreserve"},
  };
  return m;
}

std::vector<model::CounterEvent> MemoryCounters(const model::Trace& t) {
  std::vector<model::CounterEvent> out;
  for (const auto& c : t.Rows<model::CounterEvent>())
    if (Str(t, c.name_id) == model::kDeviceMemoryUsedCounter) out.push_back(c);
  return out;
}

uint64_t StatValue(const model::Trace& t, const std::string& name) {
  for (const auto& s : t.Rows<model::Stat>())
    if (Str(t, s.name_id) == name) return uint64_t(s.value);
  return 0;
}

TEST(GpuMemory, EveryKindCountedWithItsCallersStack) {
  REQUIRE_GPU();
  ProfileRun r = Profile("memory_kinds", Program("memory_kinds"), "--stacks native");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  model::Trace& t = r.trace;
  auto st = symbolize::Symbolize(&t);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  const uint64_t g = Printed(r.output, "memory_kinds: granularity ");
  const uint64_t used_in_program = Printed(r.output, "memory_kinds: used at start ");
  ASSERT_GT(g, 0u);

  std::map<RowKind, int> count;
  std::map<RowKind, uint64_t> bytes;
  std::map<int, std::vector<model::MemoryEvent>> vmm;  // op -> rows
  std::set<uint32_t> cupti_correlations;
  int with_stack = 0, named = 0, unexpected = 0;
  uint64_t first_row_ns = UINT64_MAX;
  for (const model::MemoryEvent& m : t.Rows<model::MemoryEvent>()) {
    RowKind k{m.op, m.memory_kind, m.is_async};
    ++count[k];
    bytes[k] += m.bytes;
    first_row_ns = std::min(first_row_ns, m.ts_ns);
    if (m.op <= model::kMemoryFree) {
      cupti_correlations.insert(m.correlation_id);
      EXPECT_NE(m.context_id, 0xffffffffu) << "a MEMORY2 record of a mapping call was kept";
    }
    if (m.op >= model::kMemoryVmmCreate) vmm[m.op].push_back(m);
    std::vector<std::string> frames =
        m.stack_id ? Describe(t, m.stack_id) : std::vector<std::string>{};
    auto caller = Callers().find(k);
    bool has_caller = false;
    for (const std::string& f : frames)
      has_caller |= caller != Callers().end() && f.find(caller->second) != std::string::npos;
    with_stack += m.stack_id != 0;
    named += has_caller;
    unexpected += caller == Callers().end();
    std::printf(
        "row op=%d kind=%d async=%d address=0x%llx bytes=%llu corr=%u dev=%u ctx=%u "
        "stream=%u stack=%u (%s):",
        m.op, m.memory_kind, m.is_async, static_cast<unsigned long long>(m.address),
        static_cast<unsigned long long>(m.bytes), m.correlation_id, m.device_id, m.context_id,
        m.stream_id, m.stack_id, has_caller ? "caller found" : "NO CALLER");
    for (size_t i = 0; i < frames.size() && i < 12; ++i) std::printf(" <- %s", frames[i].c_str());
    std::printf("\n");
  }
  const size_t n = t.Rows<model::MemoryEvent>().size();

  // MEMORY2 rows: exact counts and bytes.
  EXPECT_EQ((count[{model::kMemoryAlloc, 3, 0}]), 4);
  EXPECT_EQ((bytes[{model::kMemoryAlloc, 3, 0}]),
            uint64_t((1 << 20) + (3 << 20) + 5000 + (256 << 10)));
  EXPECT_EQ((count[{model::kMemoryFree, 3, 0}]), 4);
  EXPECT_EQ((count[{model::kMemoryAlloc, 3, 1}]), 2);
  EXPECT_EQ((bytes[{model::kMemoryAlloc, 3, 1}]), uint64_t((2 << 20) + 40000));
  EXPECT_EQ((count[{model::kMemoryFree, 3, 1}]), 2);
  EXPECT_EQ((count[{model::kMemoryAlloc, 5, 0}]), 1);
  EXPECT_EQ((bytes[{model::kMemoryAlloc, 5, 0}]), uint64_t(4 << 20));
  EXPECT_EQ((count[{model::kMemoryFree, 5, 0}]), 1);
  EXPECT_EQ((count[{model::kMemoryAlloc, 2, 0}]), 1);
  EXPECT_EQ((bytes[{model::kMemoryAlloc, 2, 0}]), uint64_t(1 << 20));
  EXPECT_EQ((count[{model::kMemoryFree, 2, 0}]), 1);
  // VMM rows from driver callbacks: exact counts, bytes and addresses.
  EXPECT_EQ((count[{model::kMemoryVmmReserve, 3, 0}]), 1);
  EXPECT_EQ((bytes[{model::kMemoryVmmReserve, 3, 0}]), 4 * g);
  EXPECT_EQ((count[{model::kMemoryVmmCreate, 3, 0}]), 2);
  EXPECT_EQ((bytes[{model::kMemoryVmmCreate, 3, 0}]), 4 * g);
  EXPECT_EQ((count[{model::kMemoryVmmMap, 3, 0}]), 2);
  EXPECT_EQ((bytes[{model::kMemoryVmmMap, 3, 0}]), 4 * g);
  EXPECT_EQ((count[{model::kMemoryVmmUnmap, 3, 0}]), 2);
  EXPECT_EQ((bytes[{model::kMemoryVmmUnmap, 3, 0}]), 4 * g);
  EXPECT_EQ((count[{model::kMemoryVmmRelease, 3, 0}]), 2);
  EXPECT_EQ((count[{model::kMemoryVmmUnreserve, 3, 0}]), 1);
  EXPECT_EQ((bytes[{model::kMemoryVmmUnreserve, 3, 0}]), 4 * g);
  EXPECT_EQ(unexpected, 0) << "rows of a kind the program does not make";
  EXPECT_EQ(n, 26u);
  EXPECT_EQ(with_stack, int(n));
  EXPECT_EQ(named, int(n)) << "every row's stack names the function that made the call";

  // The VMM rows describe one reservation, two handles and their mappings.
  int vmm_dupes = 0;
  if (vmm[model::kMemoryVmmReserve].size() == 1 && vmm[model::kMemoryVmmCreate].size() == 2 &&
      vmm[model::kMemoryVmmMap].size() == 2) {
    uint64_t va = vmm[model::kMemoryVmmReserve][0].address;
    EXPECT_NE(va, 0u);
    EXPECT_EQ(vmm[model::kMemoryVmmMap][0].address, va);
    EXPECT_EQ(vmm[model::kMemoryVmmMap][1].address, va + g);
    EXPECT_EQ(vmm[model::kMemoryVmmUnreserve].at(0).address, va);
    EXPECT_EQ(vmm[model::kMemoryVmmUnmap].at(0).address, va);
    EXPECT_EQ(vmm[model::kMemoryVmmUnmap].at(1).address, va + g);
    EXPECT_EQ(vmm[model::kMemoryVmmRelease].at(0).address, vmm[model::kMemoryVmmCreate][0].address);
    EXPECT_EQ(vmm[model::kMemoryVmmRelease].at(1).address, vmm[model::kMemoryVmmCreate][1].address);
    EXPECT_EQ(Printed(r.output, "memory_kinds: vmm reserve "), va);
  }
  for (const auto& [op, rows] : vmm)
    for (const model::MemoryEvent& m : rows) {
      EXPECT_NE(m.correlation_id, 0u);
      EXPECT_NE(m.context_id, 0u);
      EXPECT_EQ(m.device_id, 0u);
      vmm_dupes += cupti_correlations.count(m.correlation_id) != 0;
    }
  EXPECT_EQ(vmm_dupes, 0) << "a MEMORY2 row for a VMM call (counted twice)";
  // CUPTI reports the two maps and two unmaps as allocations and frees
  // (H100, 2026-11-24): dropped for the capture's own rows.
  const uint64_t dropped = StatValue(t, "capture.cupti_vmm_memory_records_dropped");
  EXPECT_EQ(dropped, 4u);

  // Device memory in use: read at the context's creation (before any
  // allocation) and at the end.
  auto counters = MemoryCounters(t);
  ASSERT_EQ(counters.size(), 2u) << "at the context's creation and at the end";
  const model::CounterEvent& first = counters.front();
  EXPECT_LT(first.ts_ns, first_row_ns);
  EXPECT_EQ(first.device_id, 0u);
  EXPECT_GT(first.value, 0.0);
  EXPECT_NEAR(first.value, double(used_in_program), double(32 << 20))
      << "the program's own reading after cudaSetDevice, before any allocation";
  std::printf("counters:");
  for (const auto& c : counters)
    std::printf(" [dev %u ts %llu %.1f MiB]", c.device_id, static_cast<unsigned long long>(c.ts_ns),
                c.value / (1 << 20));
  std::printf("\n");

  std::printf(
      "GPU-CHECK memory rows: alloc=%d free=%d vmm_create=%d vmm_release=%d vmm_map=%d "
      "vmm_unmap=%d vmm_reserve=%d vmm_unreserve=%d total=%zu stacks=%d/%zu named=%d/%zu "
      "cupti_rows_for_vmm=%d (dropped %llu) meminfo_counters=%zu first=%.1f MiB (program after "
      "cudaSetDevice: %.1f MiB) last=%.1f MiB alloc_site_calls=%llu\n",
      count[{1, 3, 0}] + count[{1, 3, 1}] + count[{1, 5, 0}] + count[{1, 2, 0}],
      count[{2, 3, 0}] + count[{2, 3, 1}] + count[{2, 5, 0}] + count[{2, 2, 0}], count[{3, 3, 0}],
      count[{4, 3, 0}], count[{5, 3, 0}], count[{6, 3, 0}], count[{7, 3, 0}], count[{8, 3, 0}], n,
      with_stack, n, named, n, vmm_dupes, static_cast<unsigned long long>(dropped), counters.size(),
      first.value / (1 << 20), double(used_in_program) / (1 << 20),
      counters.back().value / (1 << 20),
      static_cast<unsigned long long>(StatValue(t, "capture.cost.alloc.calls")));
}

TEST(GpuMemory, WithoutStacksVmmRowsStayWithoutTheMemoryGroupNothing) {
  REQUIRE_GPU();
  ProfileRun nostack = Profile("memory_kinds_nostacks", Program("memory_kinds"), "--stacks none");
  ProfileRun off = Profile("memory_kinds_off", Program("memory_kinds"), "--kinds default,-memory");
  ASSERT_EQ(nostack.exit_code(), 0) << nostack.output;
  ASSERT_EQ(off.exit_code(), 0) << off.output;
  int vmm = 0, cupti = 0, stacks = 0;
  for (const model::MemoryEvent& m : nostack.trace.Rows<model::MemoryEvent>()) {
    vmm += m.op >= model::kMemoryVmmCreate;
    cupti += m.op <= model::kMemoryFree;
    stacks += m.stack_id != 0;
  }
  EXPECT_EQ(vmm, 10);
  EXPECT_EQ(cupti, 16);
  EXPECT_EQ(stacks, 0);
  EXPECT_EQ(StatValue(nostack.trace, "capture.cupti_vmm_memory_records_dropped"), 4u);
  EXPECT_GE(MemoryCounters(nostack.trace).size(), 1u);
  // VMM entries and exits only (10 calls): no callback on cudaMalloc & co.
  EXPECT_EQ(StatValue(nostack.trace, "capture.cost.alloc.calls"), 20u);
  EXPECT_EQ(off.trace.Rows<model::MemoryEvent>().size(), 0u);
  EXPECT_EQ(MemoryCounters(off.trace).size(), 0u);
  EXPECT_EQ(StatValue(off.trace, "capture.cost.alloc.calls"), 0u);
  std::printf(
      "GPU-CHECK memory --stacks none: vmm=%d cupti=%d stacks=%d alloc_site_calls=%llu; "
      "-memory: rows=%zu counters=%zu alloc_site_calls=%llu\n",
      vmm, cupti, stacks,
      static_cast<unsigned long long>(StatValue(nostack.trace, "capture.cost.alloc.calls")),
      off.trace.Rows<model::MemoryEvent>().size(), MemoryCounters(off.trace).size(),
      static_cast<unsigned long long>(StatValue(off.trace, "capture.cost.alloc.calls")));
}

}  // namespace
}  // namespace tracesmith::capture
