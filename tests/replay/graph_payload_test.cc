// Graph launch records (payload chunk 0x46): round trip, validation against
// modules and snapshots, each refusal of a damaged chunk, and the graph
// helpers (topological order, ancestors) that capture and node replay use.
#include <gtest/gtest.h>

#include <cstdlib>
#include "pattern.h"
#include "testing/temp_file.h"

#include "tracesmith/base/bytes.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/replay_payload.h"

namespace tracesmith::replay {
namespace {

using ::tracesmith::testing::Pattern;

// kernel(0) -> memset(1), kernel(0) -> memcpy(2), {1, 2} -> empty(3) -> kernel(4)
format::GraphLaunchRecord SampleGraph(uint64_t module) {
  format::GraphLaunchRecord g;
  g.index = 5;
  g.correlation_id = 77;
  g.stream_id = 3;
  g.recorded_ns = 9000;
  g.snapshot_ranges = 1;
  g.coverage.scope = format::MemoryScope::kReachable;
  g.coverage.words_unresolved = 2;
  g.nodes.resize(5);
  g.nodes[0].kind = format::GraphNodeKind::kKernel;
  g.nodes[0].kernel.module_hash = module;
  g.nodes[0].kernel.function = "_Z5writePfi";
  g.nodes[0].kernel.grid[0] = 4;
  g.nodes[0].kernel.block[0] = 128;
  g.nodes[0].kernel.dynamic_shared_bytes = 64;
  g.nodes[0].kernel.params = Pattern(12, 9);
  g.nodes[0].kernel.param_info = {{0, 8}, {8, 4}};
  g.nodes[0].kernel.attributes = {{8, {2, 0, 0, 0}}};
  g.nodes[1].kind = format::GraphNodeKind::kMemset;
  g.nodes[1].dependencies = {0};
  g.nodes[1].dst = 0x7f0000001000;
  g.nodes[1].dst_pitch = 256;
  g.nodes[1].value = 0xabcd;
  g.nodes[1].element_size = 2;
  g.nodes[1].width = 64;
  g.nodes[1].height = 3;
  g.nodes[2].kind = format::GraphNodeKind::kMemcpy;
  g.nodes[2].dependencies = {0};
  g.nodes[2].dst = 0x7f0000002000;
  g.nodes[2].src = 0x7f0000000000;
  g.nodes[2].width = 4096;
  g.nodes[3].kind = format::GraphNodeKind::kEmpty;
  g.nodes[3].dependencies = {1, 2};
  g.nodes[4] = g.nodes[0];
  g.nodes[4].dependencies = {3};
  g.nodes[4].kernel.function = "_Z5chasePPfi";
  return g;
}

struct GraphFile {
  ::tracesmith::testing::TempPath tmp;
  std::vector<uint8_t> image = Pattern(3000, 1);
  std::vector<uint8_t> before = Pattern(8192, 2), after = Pattern(8192, 3);
  uint64_t module = 0;
  void Write(bool with_module = true, bool with_after = true) {
    auto w = format::SbtWriter::Open(tmp.path());
    ASSERT_TRUE(w.ok());
    format::ReplayPayloadWriter p(w->get());
    if (with_module) {
      auto m = p.AddModule(image, format::ImageKind::kCubin, "graph.cubin");
      ASSERT_TRUE(m.ok());
      module = *m;
    } else {
      module = 0x1234;
    }
    ASSERT_TRUE(p.AddGraphLaunch(SampleGraph(module)).ok());
    ASSERT_TRUE(p.AddSnapshot(5, format::SnapshotPhase::kBefore, 0x7f0000000000, before).ok());
    if (with_after) {
      ASSERT_TRUE(p.AddSnapshot(5, format::SnapshotPhase::kAfter, 0x7f0000000000, after).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  StatusOr<format::ReplayCapture> Read() {
    ASSIGN_OR_RETURN(auto r, format::SbtReader::Open(tmp.path()));
    return format::ReadReplayCapture(*r);
  }
  std::vector<uint8_t> Payload(uint64_t* offset) {
    std::vector<uint8_t> payload;
    auto r = format::SbtReader::Open(tmp.path());
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE((*r)->ReadRawChunks(uint16_t(format::PayloadChunk::kGraphLaunch),
                                    [&](std::span<const uint8_t> p, uint64_t off) {
                                      payload.assign(p.begin(), p.end());
                                      *offset = off;
                                      return OkStatus();
                                    })
                    .ok());
    return payload;
  }
};

TEST(GraphPayloadTest, RoundTrip) {
  GraphFile f;
  f.Write();
  auto cap = f.Read();
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  ASSERT_TRUE(format::ValidateCapture(*cap).ok()) << format::ValidateCapture(*cap).ToString();
  EXPECT_TRUE(cap->launches.empty());
  ASSERT_EQ(cap->graphs.size(), 1u);
  const format::GraphLaunchRecord want = SampleGraph(f.module), &got = cap->graphs[0];
  EXPECT_EQ(cap->FindGraph(5), &got);
  EXPECT_EQ(cap->FindGraph(4), nullptr);
  EXPECT_EQ(got.index, 5u);
  EXPECT_EQ(got.correlation_id, 77u);
  EXPECT_EQ(got.stream_id, 3u);
  EXPECT_EQ(got.recorded_ns, 9000u);
  EXPECT_EQ(got.snapshot_ranges, 1u);
  EXPECT_EQ(got.coverage.scope, format::MemoryScope::kReachable);
  EXPECT_EQ(got.coverage.words_unresolved, 2u);
  ASSERT_EQ(got.nodes.size(), 5u);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(got.nodes[k].kind, want.nodes[k].kind) << k;
    EXPECT_EQ(got.nodes[k].dependencies, want.nodes[k].dependencies) << k;
  }
  const format::LaunchRecord& k0 = got.nodes[0].kernel;
  EXPECT_EQ(k0.module_hash, f.module);
  EXPECT_EQ(k0.function, "_Z5writePfi");
  EXPECT_EQ(k0.grid[0], 4u);
  EXPECT_EQ(k0.block[0], 128u);
  EXPECT_EQ(k0.dynamic_shared_bytes, 64u);
  EXPECT_EQ(k0.params, want.nodes[0].kernel.params);
  ASSERT_EQ(k0.param_info.size(), 2u);
  EXPECT_EQ(k0.param_info[1].offset, 8u);
  ASSERT_EQ(k0.attributes.size(), 1u);
  EXPECT_EQ(k0.attributes[0].id, 8u);
  EXPECT_EQ(k0.index, 5u);  // a node's kernel carries its graph launch's index
  EXPECT_EQ(got.nodes[4].kernel.function, "_Z5chasePPfi");
  const format::GraphNodeRecord& ms = got.nodes[1];
  EXPECT_EQ(ms.dst, 0x7f0000001000u);
  EXPECT_EQ(ms.dst_pitch, 256u);
  EXPECT_EQ(ms.value, 0xabcdu);
  EXPECT_EQ(ms.element_size, 2u);
  EXPECT_EQ(ms.width, 64u);
  EXPECT_EQ(ms.height, 3u);
  EXPECT_EQ(ms.Written().address, 0x7f0000001000u);
  EXPECT_EQ(ms.Written().size, 2 * 256u + 128u);  // two pitches and a 128-byte last row
  const format::GraphNodeRecord& mc = got.nodes[2];
  EXPECT_EQ(mc.src, 0x7f0000000000u);
  EXPECT_EQ(mc.Read().size, 4096u);
  EXPECT_EQ(mc.Written().address, 0x7f0000002000u);
  EXPECT_EQ(got.DescribeNodes(), "2 kernels, 1 memset, 1 memcpy, 1 empty");
}

TEST(GraphPayloadTest, ValidateNamesMissingModuleAndSnapshots) {
  {
    GraphFile f;
    f.Write(/*with_module=*/false);
    auto cap = f.Read();
    ASSERT_TRUE(cap.ok());
    Status st = format::ValidateCapture(*cap);
    EXPECT_NE(st.message().find("graph launch 5 node 0 (_Z5writePfi): module"), std::string::npos)
        << st.ToString();
  }
  {
    GraphFile f;
    f.Write(true, /*with_after=*/false);
    auto cap = f.Read();
    ASSERT_TRUE(cap.ok());
    Status st = format::ValidateCapture(*cap);
    EXPECT_NE(st.message().find("graph launch 5: 1 'before' and 0 'after'"), std::string::npos)
        << st.ToString();
  }
  {  // one index for a kernel launch and a graph launch
    GraphFile f;
    f.Write();
    auto cap = f.Read();
    ASSERT_TRUE(cap.ok());
    format::LaunchRecord l;
    l.index = 5;
    l.module_hash = f.module;
    cap->launches.push_back(l);
    Status st = format::ValidateCapture(*cap);
    EXPECT_NE(st.message().find("launch 5 is recorded both"), std::string::npos) << st.ToString();
  }
}

// A hand-made chunk: header fields, then `nodes` (bytes after the count).
std::vector<uint8_t> Chunk(uint64_t count, const std::vector<uint8_t>& nodes) {
  ByteWriter w;
  w.PutU8(1);       // version
  w.PutVarint(5);   // index
  w.PutVarint(77);  // correlation id
  w.PutVarint(0);   // stream
  w.PutVarint(0);   // recorded
  w.PutVarint(0);   // snapshot ranges
  w.PutU8(2);       // scope
  for (int k = 0; k < 4; ++k) w.PutVarint(0);
  w.PutVarint(count);
  w.PutBytes(nodes.data(), nodes.size());
  return w.buffer();
}

TEST(GraphPayloadTest, RefusesDamagedChunks) {
  struct Case {
    const char* name;
    std::vector<uint8_t> payload;
    const char* message;
  } cases[] = {
      {"dependency on itself", Chunk(2, {4, 0, 4, 1, 1}), "node 1 depends on node 1"},
      {"dependency on a later node", Chunk(3, {4, 0, 4, 1, 2, 4, 0}), "node 1 depends on node 2"},
      {"too many dependencies", Chunk(2, {4, 0, 4, 3, 0, 0, 0}), "node 1: 3 dependencies"},
      {"unknown kind", Chunk(1, {9, 0}), "unknown graph node kind 9"},
      {"kind 0", Chunk(1, {0, 0}), "unknown graph node kind 0"},
      {"node count over the chunk", Chunk(40, {4, 0}), "node count 40 exceeds"},
      {"node count over the limit",
       Chunk(format::kMaxGraphNodes + 1, std::vector<uint8_t>(140000, 0)),
       "node count 65537 exceeds the limit (65536)"},
      {"truncated memset", Chunk(1, {2, 0, 1, 2, 3}), "memset destination truncated"},
      {"memset element size", Chunk(1, {2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 3, 1, 1}),
       "memset element size 3"},
      {"memcpy pitch below its rows",
       Chunk(1, {3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 4, 4, 8, 2}),
       "memcpy of 8 x 2 is not a valid device range"},
      {"truncated kernel", Chunk(1, {1, 0, 1, 2, 3, 4}), "module hash truncated"},
      {"trailing bytes", Chunk(1, {4, 0, 7}), "1 trailing bytes"},
  };
  for (const Case& c : cases) {
    format::ReplayCapture out;
    Status st = format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kGraphLaunch), c.payload,
                                          4120, &out);
    ASSERT_FALSE(st.ok()) << c.name;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << c.name << ": " << st.ToString();
    EXPECT_NE(st.message().find("replay graph launch chunk at byte 4120 (0x1018)"),
              std::string::npos)
        << c.name << ": " << st.ToString();
    EXPECT_TRUE(out.graphs.empty()) << c.name;
  }
}

TEST(GraphPayloadTest, EveryTruncationOfAValidChunkIsRefused) {
  GraphFile f;
  f.Write();
  uint64_t offset = 0;
  std::vector<uint8_t> payload = f.Payload(&offset);
  ASSERT_FALSE(payload.empty());
  format::ReplayCapture whole;
  ASSERT_TRUE(format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kGraphLaunch), payload,
                                        offset, &whole)
                  .ok());
  for (size_t n = 0; n < payload.size(); ++n) {
    format::ReplayCapture out;
    Status st =
        format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kGraphLaunch),
                                  std::span<const uint8_t>(payload.data(), n), offset, &out);
    EXPECT_FALSE(st.ok()) << "cut at " << n;
  }
}

TEST(GraphPayloadTest, WriterRefusesForwardDependencies) {
  ::tracesmith::testing::TempPath tmp;
  auto w = format::SbtWriter::Open(tmp.path());
  ASSERT_TRUE(w.ok());
  format::ReplayPayloadWriter p(w->get());
  format::GraphLaunchRecord g = SampleGraph(1);
  g.nodes[1].dependencies = {3};
  Status st = p.AddGraphLaunch(g);
  EXPECT_NE(st.message().find("node 1 depends on node 3, not an earlier one"), std::string::npos)
      << st.ToString();
}

TEST(GraphPayloadTest, AncestorsAreTheTransitiveDependencies) {
  format::GraphLaunchRecord g = SampleGraph(1);
  EXPECT_EQ(format::GraphAncestors(g, 0), std::vector<uint32_t>{});
  EXPECT_EQ(format::GraphAncestors(g, 1), std::vector<uint32_t>{0});
  EXPECT_EQ(format::GraphAncestors(g, 3), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(format::GraphAncestors(g, 4), (std::vector<uint32_t>{0, 1, 2, 3}));
  // Two independent chains: a node's ancestors leave the other chain out.
  format::GraphLaunchRecord two;
  two.nodes.resize(4);
  two.nodes[2].dependencies = {0};
  two.nodes[3].dependencies = {1};
  EXPECT_EQ(format::GraphAncestors(two, 3), std::vector<uint32_t>{1});
  EXPECT_EQ(format::GraphAncestors(two, 9), std::vector<uint32_t>{});
}

// Node 4 of the sample (after the empty join of memset 1 and memcpy 2, both
// after kernel 0) has every other node before it; node 1 (the memset)
// needs kernel 0 first, and the memcpy, the join and the last kernel run
// after it.
TEST(GraphPayloadTest, SplitForNodeReplay) {
  format::GraphLaunchRecord g = SampleGraph(1);
  format::GraphNodeSplit s = format::SplitForNodeReplay(g, 1);
  EXPECT_EQ(s.before, (std::vector<bool>{true, false, false, false, false}));
  EXPECT_EQ(s.after, (std::vector<bool>{false, false, true, true, true}));
  s = format::SplitForNodeReplay(g, 4);
  EXPECT_EQ(s.before, (std::vector<bool>{true, true, true, true, false}));
  EXPECT_EQ(s.after, (std::vector<bool>{false, false, false, false, false}));
  s = format::SplitForNodeReplay(g, 0);
  EXPECT_EQ(s.before, (std::vector<bool>{false, false, false, false, false}));
  EXPECT_EQ(s.after, (std::vector<bool>{false, true, true, true, true}));
}

TEST(GraphPayloadTest, TopologicalOrder) {
  // 3 -> 1 -> 0, 2 alone: ready nodes are taken smallest first.
  auto order = format::TopologicalOrder(4, {{3, 1}, {1, 0}});
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(*order, (std::vector<uint32_t>{2, 3, 1, 0}));
  auto diamond = format::TopologicalOrder(4, {{0, 2}, {0, 1}, {1, 3}, {2, 3}});
  ASSERT_TRUE(diamond.ok());
  EXPECT_EQ(*diamond, (std::vector<uint32_t>{0, 1, 2, 3}));
  auto cycle = format::TopologicalOrder(3, {{0, 1}, {1, 2}, {2, 1}});
  EXPECT_EQ(cycle.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cycle.status().message().find("cycle (1 of 3 nodes ordered)"), std::string::npos);
  EXPECT_EQ(format::TopologicalOrder(2, {{0, 2}}).status().code(), StatusCode::kInvalidArgument);
}

// The fuzzer's seed for this chunk (fuzz/corpus/replay_payload/chunk_46_0:
// selector bytes 0, 6, then the payload) is a valid graph launch, so the
// fuzzer starts from the parser's deep paths.
TEST(GraphPayloadTest, FuzzSeedParses) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "run through ctest (TS_SOURCE_DIR)";
  auto text = ReadFileToString(std::string(src) + "/fuzz/corpus/replay_payload/chunk_46_0");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  std::vector<uint8_t> bytes(text->begin(), text->end());
  ASSERT_GT(bytes.size(), 2u);
  format::ReplayCapture out;
  Status st = format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kGraphLaunch),
                                        std::span<const uint8_t>(bytes).subspan(2), 0, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(out.graphs.size(), 1u);
  EXPECT_EQ(out.graphs[0].DescribeNodes(), "1 kernel, 1 memset, 1 memcpy, 1 empty");
}

}  // namespace
}  // namespace tracesmith::replay
