// Conversion of CUPTI activity records to model rows: hand-built records for
// edge cases, and real records dumped on the GPU machine (fixtures/).
#include "tracesmith/capture/activity_converter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "capture/raw_dump.h"
#include "capture/trace_checks.h"
#include "tracesmith/capture/row_sink.h"

namespace tracesmith::capture {
namespace {

using testing::ApisNamed;
using testing::KernelsNamed;
using testing::RangeNamed;
using testing::Str;

class FakeNames final : public NameSource {
 public:
  std::string_view String(const char* p) override { return p ? std::string_view(p) : ""; }
  std::string_view ApiName(uint8_t domain, uint32_t cbid) override {
    if (domain == model::kApiRuntime && cbid == 211) return "cudaLaunchKernel_v7000";
    if (domain == model::kApiRuntime && cbid == 311) return "cudaGraphLaunch_v10000";
    return "cudaOther_v1";
  }
  std::string ThreadName(uint32_t tid) override { return "thread" + std::to_string(tid); }
};

struct Harness {
  model::Trace trace;
  TraceSink sink{&trace};
  FakeNames names;
  ActivityConverter conv{&sink, &names, 1234};
};

template <typename R>
R Zeroed(CUpti_ActivityKind kind) {
  R r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  return r;
}

TEST(ActivityConverter, KernelFieldsAndDemangling) {
  Harness h;
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 1000;
  k.end = 3000;
  k.deviceId = 1;
  k.contextId = 2;
  k.streamId = 7;
  k.gridX = 7, k.gridY = 3, k.gridZ = 1;
  k.blockX = 64, k.blockY = 2, k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 128;
  k.dynamicSharedMemory = 256;
  k.correlationId = 99;
  k.graphId = 5;
  k.graphNodeId = 0x100000001ull;
  k.name = "_Z12scale_kernelPfif";
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&k));
  ASSERT_EQ(h.trace.Rows<model::KernelEvent>().size(), 1u);
  const auto& e = h.trace.Rows<model::KernelEvent>()[0];
  EXPECT_EQ(e.start_ns, 1000u);
  EXPECT_EQ(e.end_ns, 3000u);
  EXPECT_EQ(e.pid, 1234u);
  EXPECT_EQ(e.device_id, 1u);
  EXPECT_EQ(e.stream_id, 7u);
  EXPECT_EQ(e.grid_x * 100 + e.grid_y * 10 + e.grid_z, 731u);
  EXPECT_EQ(e.block_x, 64u);
  EXPECT_EQ(e.block_y, 2u);
  EXPECT_EQ(e.registers_per_thread, 32u);
  EXPECT_EQ(e.static_shared_bytes, 128u);
  EXPECT_EQ(e.dynamic_shared_bytes, 256u);
  EXPECT_EQ(e.graph_id, 5u);
  EXPECT_EQ(e.graph_node_id, 0x100000001ull);
  EXPECT_EQ(Str(h.trace, e.name_id), "_Z12scale_kernelPfif");
  EXPECT_EQ(Str(h.trace, e.demangled_id), "scale_kernel(float*, int, float)");
}

TEST(ActivityConverter, NonCxxKernelNameIsItsOwnDemangledName) {
  Harness h;
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = "triton_poi_fused_add_0";
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&k));
  const auto& e = h.trace.Rows<model::KernelEvent>()[0];
  EXPECT_EQ(e.demangled_id, e.name_id);
}

TEST(ActivityConverter, ApiRowsStripVersionAndJoinExternalIds) {
  Harness h;
  auto ext = Zeroed<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  ext.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  ext.externalId = 777;
  ext.correlationId = 42;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&ext));
  auto api = Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  api.cbid = 211;
  api.start = 10;
  api.end = 20;
  api.threadId = 555;
  api.correlationId = 42;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&api));
  api.correlationId = 43;  // no external id
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&api));
  auto rows = ApisNamed(h.trace, "cudaLaunchKernel");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].external_id, 777u);
  EXPECT_EQ(rows[0].external_kind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
  EXPECT_EQ(rows[1].external_id, 0u);
  EXPECT_EQ(rows[0].domain, model::kApiRuntime);
  EXPECT_EQ(rows[0].tid, 555u);
  // The thread is described once.
  ASSERT_EQ(h.trace.Rows<model::Thread>().size(), 1u);
  EXPECT_EQ(Str(h.trace, h.trace.Rows<model::Thread>()[0].name_id), "thread555");
}

TEST(ActivityConverter, GraphLaunchCompletedByItsFirstKernel) {
  Harness h;
  auto api = Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  api.cbid = 311;
  api.correlationId = 8;
  api.start = 5;
  api.end = 6;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&api));
  EXPECT_TRUE(h.trace.Rows<model::GraphLaunchEvent>().empty()) << "held until a kernel joins";
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.correlationId = 8;
  k.graphId = 3;
  k.streamId = 9;
  k.deviceId = 0;
  k.name = "k";
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&k));
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&k));  // second node: no second launch
  ASSERT_EQ(h.trace.Rows<model::GraphLaunchEvent>().size(), 1u);
  const auto& g = h.trace.Rows<model::GraphLaunchEvent>()[0];
  EXPECT_EQ(g.graph_id, 3u);
  EXPECT_EQ(g.stream_id, 9u);
  EXPECT_EQ(g.correlation_id, 8u);
  // A launch whose kernels never came is still written at Finish().
  api.correlationId = 10;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&api));
  h.conv.Finish();
  EXPECT_EQ(h.trace.Rows<model::GraphLaunchEvent>().size(), 2u);
}

TEST(ActivityConverter, NvtxRangesPairByIdWithDepthAndStyle) {
  Harness h;
  auto m = Zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.threadId = 77;
  auto send = [&](uint32_t id, uint32_t flags, uint64_t ts, const char* name) {
    m.id = id;
    m.flags = static_cast<CUpti_ActivityFlag>(flags);
    m.timestamp = ts;
    m.name = name;
    h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));
  };
  send(1, CUPTI_ACTIVITY_FLAG_MARKER_START, 100, "outer");
  send(2, CUPTI_ACTIVITY_FLAG_MARKER_START, 110, "inner");
  auto data = Zeroed<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  data.id = 2;
  data.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
  data.color = 0xff00ff00;
  data.category = 4;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&data));
  send(2, CUPTI_ACTIVITY_FLAG_MARKER_END, 120, nullptr);
  send(3, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 125, "mark");
  send(1, CUPTI_ACTIVITY_FLAG_MARKER_END, 130, nullptr);
  send(9, CUPTI_ACTIVITY_FLAG_MARKER_END, 140, nullptr);        // never started
  send(10, CUPTI_ACTIVITY_FLAG_MARKER_START, 150, "unclosed");  // never ended
  h.conv.Finish();
  const auto* outer = RangeNamed(h.trace, "outer");
  const auto* inner = RangeNamed(h.trace, "inner");
  ASSERT_TRUE(outer && inner);
  EXPECT_EQ(outer->start_ns, 100u);
  EXPECT_EQ(outer->end_ns, 130u);
  EXPECT_EQ(outer->depth, 0u);
  EXPECT_EQ(inner->depth, 1u);
  EXPECT_EQ(inner->color, 0xff00ff00u);
  EXPECT_EQ(inner->category, 4u);
  EXPECT_EQ(inner->tid, 77u);
  ASSERT_EQ(h.trace.Rows<model::NvtxMarkerEvent>().size(), 1u);
  EXPECT_EQ(Str(h.trace, h.trace.Rows<model::NvtxMarkerEvent>()[0].name_id), "mark");
  EXPECT_EQ(h.conv.stats().nvtx_unmatched_end, 1u);
  EXPECT_EQ(h.conv.stats().nvtx_unclosed, 1u);
}

TEST(ActivityConverter, SyncDeviceFromContextAndNoStream) {
  Harness h;
  auto c = Zeroed<CUpti_ActivityContext3>(CUPTI_ACTIVITY_KIND_CONTEXT);
  c.contextId = 4;
  c.deviceId = 2;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&c));
  auto s = Zeroed<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  s.contextId = 4;
  s.streamId = 0xffffffffu;
  s.cudaEventId = 0xffffffffu;  // CUPTI_SYNCHRONIZATION_INVALID_VALUE: no event
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&s));
  const auto& e = h.trace.Rows<model::SyncEvent>().at(0);
  EXPECT_EQ(e.device_id, 2u);
  EXPECT_EQ(e.stream_id, 0u);
  EXPECT_EQ(e.event_id, 0u);
  EXPECT_EQ(e.sync_type, model::kSyncContextSynchronize);
}

TEST(ActivityConverter, UnknownKindsAreCountedNotFatal) {
  Harness h;
  auto r = Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_PCIE);
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&r));
  EXPECT_EQ(h.conv.stats().unknown_kind, 1u);
  EXPECT_EQ(h.trace.EventCount(), 0u);
}

TEST(ActivityConverter, StackIdsJoinByCorrelation) {
  struct Stacks final : StackLookup {
    uint32_t Find(uint32_t c) override { return c == 5 ? 17 : 0; }
  } stacks;
  Harness h;
  h.conv.set_stack_lookup(&stacks);
  auto api = Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  api.cbid = 211;
  api.correlationId = 5;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&api));
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.correlationId = 5;
  k.name = "k";
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&k));
  k.correlationId = 6;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&k));
  EXPECT_EQ(h.trace.Rows<model::ApiEvent>()[0].stack_id, 17u);
  EXPECT_EQ(h.trace.Rows<model::KernelEvent>()[0].stack_id, 17u);
  EXPECT_EQ(h.trace.Rows<model::KernelEvent>()[1].stack_id, 0u);
}

// MEMORY2 reports cuMemMap/cuMemUnmap as device allocations/frees without a
// context (H100, CUPTI 13.0); the capture makes its own VMM rows for them,
// so once a mapping call is noted those records are dropped, and only those.
TEST(ActivityConverter, MemoryRecordsOfMappingCallsAreDropped) {
  Harness h;
  auto m = Zeroed<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 2 << 20;
  m.contextId = CUPTI_INVALID_CONTEXT_ID;
  m.correlationId = 30;
  // No mapping call noted: converted as it comes (a trace of old raw dumps).
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));
  ASSERT_EQ(h.trace.Rows<model::MemoryEvent>().size(), 1u);
  h.conv.NoteMappingCall(31);
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));  // no context: a mapping
  m.correlationId = 31;
  m.contextId = 1;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));  // the mapping call's id
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));
  EXPECT_EQ(h.conv.stats().vmm_memory_records, 3u);
  // Other allocations stay: a context, or another kind without one.
  m.correlationId = 40;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));
  m.contextId = CUPTI_INVALID_CONTEXT_ID;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));
  EXPECT_EQ(h.trace.Rows<model::MemoryEvent>().size(), 3u);
  EXPECT_EQ(h.conv.stats().vmm_memory_records, 3u);
}

// MEMORY2 also reports an IPC import as an allocation and a free with the
// open/close calls' correlation ids and a context (H100, CUPTI 13.0): those
// records, and only those, are dropped once the calls are noted; no other
// record is dropped for it (no context-less rule).
TEST(ActivityConverter, MemoryRecordsOfIpcCallsAreDropped) {
  Harness h;
  auto m = Zeroed<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 1 << 20;
  m.contextId = 1;
  m.correlationId = 1;
  h.conv.NoteImportCall(1);
  h.conv.NoteImportCall(3);
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));  // the open's record
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  m.correlationId = 3;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));  // the close's record
  EXPECT_EQ(h.trace.Rows<model::MemoryEvent>().size(), 0u);
  EXPECT_EQ(h.conv.stats().ipc_memory_records, 2u);
  m.correlationId = 2;  // another call: kept
  m.contextId = CUPTI_INVALID_CONTEXT_ID;
  h.conv.Convert(reinterpret_cast<CUpti_Activity*>(&m));
  EXPECT_EQ(h.trace.Rows<model::MemoryEvent>().size(), 1u);
  EXPECT_EQ(h.conv.stats().vmm_memory_records, 0u);
}

TEST(StripApiVersion, Works) {
  EXPECT_EQ(StripApiVersion("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(StripApiVersion("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync_ptsz");
  EXPECT_EQ(StripApiVersion("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(StripApiVersion("cu_v"), "cu_v");
}

// ---- real records, dumped on the GPU machine ------------------------------

std::string Fixture(const char* name) { return std::string(TS_CAPTURE_FIXTURES) + "/" + name; }

model::Trace ConvertDump(const RawDump& dump, ConverterStats* stats = nullptr) {
  model::Trace trace;
  TraceSink sink(&trace);
  RawDumpNames names(&dump);
  ActivityConverter conv(&sink, &names, 1);
  for (size_t i = 0; i < dump.records.size(); ++i) conv.Convert(dump.record(i));
  conv.Finish();
  if (stats) *stats = conv.stats();
  return trace;
}

// gpu/programs/kernel_count.cu run with N=10 under --dump-raw.
TEST(RealCuptiRecords, KernelCountProgram) {
  auto dump = ReadRawDump(Fixture("kernel_count_10.rawdump"));
  ASSERT_TRUE(dump.ok()) << dump.status().ToString();
  ConverterStats stats;
  model::Trace t = ConvertDump(*dump, &stats);
  EXPECT_EQ(stats.unknown_kind, 0u);
  auto kernels = KernelsNamed(t, "scale_kernel");
  ASSERT_EQ(kernels.size(), 10u);
  std::set<uint32_t> correlations;
  for (const auto& k : kernels) {
    EXPECT_EQ(k.grid_x, 7u);
    EXPECT_EQ(k.grid_y, 3u);
    EXPECT_EQ(k.grid_z, 1u);
    EXPECT_EQ(k.block_x, 64u);
    EXPECT_EQ(k.block_y, 2u);
    EXPECT_EQ(k.block_z, 1u);
    EXPECT_LT(k.start_ns, k.end_ns);
    EXPECT_EQ(Str(t, k.demangled_id), "scale_kernel(float*, int, float)");
    correlations.insert(k.correlation_id);
  }
  // Every kernel joins its cudaLaunchKernel row by correlation id.
  auto launches = ApisNamed(t, "cudaLaunchKernel");
  ASSERT_EQ(launches.size(), 10u);
  for (const auto& a : launches) EXPECT_EQ(correlations.count(a.correlation_id), 1u);
  int htod = 0, dtoh = 0, dtod = 0;
  for (const auto& m : t.Rows<model::MemcpyEvent>()) {
    if (m.copy_kind == model::kCopyHtoD && m.bytes == (1u << 20)) ++htod;
    if (m.copy_kind == model::kCopyDtoH && m.bytes == (1u << 20)) ++dtoh;
    if (m.copy_kind == model::kCopyDtoD && m.bytes == (1u << 18)) ++dtod;
  }
  EXPECT_EQ(htod, 1);
  EXPECT_EQ(dtoh, 1);
  EXPECT_EQ(dtod, 1);
  std::multiset<uint32_t> memset_values;
  for (const auto& m : t.Rows<model::MemsetEvent>())
    if (m.bytes == 4096) memset_values.insert(m.value);
  EXPECT_EQ(memset_values, (std::multiset<uint32_t>{0, 0x7f}));
  const auto* outer = RangeNamed(t, "outer");
  const auto* inner = RangeNamed(t, "inner");
  ASSERT_TRUE(outer && inner);
  EXPECT_EQ(outer->depth, 0u);
  EXPECT_EQ(inner->depth, 1u);
  EXPECT_LE(outer->start_ns, inner->start_ns);
  EXPECT_GE(outer->end_ns, inner->end_ns);
  EXPECT_EQ(t.Rows<model::NvtxMarkerEvent>().size(), 1u);
  int allocs = 0;
  for (const auto& m : t.Rows<model::MemoryEvent>())
    if (m.op == model::kMemoryAlloc && m.bytes == (1u << 20)) ++allocs;
  EXPECT_EQ(allocs, 2);
}

// gpu/programs/cuda_graph.cu run with L=2 under --dump-raw.
TEST(RealCuptiRecords, CudaGraphProgram) {
  auto dump = ReadRawDump(Fixture("cuda_graph_2.rawdump"));
  ASSERT_TRUE(dump.ok()) << dump.status().ToString();
  model::Trace t = ConvertDump(*dump);
  auto kernels = KernelsNamed(t, "graph_step");
  ASSERT_EQ(kernels.size(), 6u);
  std::set<uint64_t> nodes;
  std::set<uint32_t> graphs;
  for (const auto& k : kernels) {
    EXPECT_NE(k.graph_id, 0u);
    nodes.insert(k.graph_node_id);
    graphs.insert(k.graph_id);
  }
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_EQ(graphs.size(), 1u);
  ASSERT_EQ(t.Rows<model::GraphLaunchEvent>().size(), 2u);
  for (const auto& g : t.Rows<model::GraphLaunchEvent>()) EXPECT_EQ(g.graph_id, *graphs.begin());
}

TEST(RawDump, RejectsTruncatedAndForeignFiles) {
  EXPECT_FALSE(ReadRawDump(Fixture("does_not_exist.rawdump")).ok());
  auto dump = ReadRawDump(std::string(TS_CAPTURE_FIXTURES) + "/../activity_converter_test.cc");
  ASSERT_FALSE(dump.ok());
  EXPECT_NE(dump.status().message().find("bad magic"), std::string::npos);
}

}  // namespace
}  // namespace tracesmith::capture
