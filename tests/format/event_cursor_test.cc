// SbtReader::Events: the pull-based pass Stream is built on. Its chunks come
// in file order with the previous chunk's rows cleared, a kind filter skips
// chunks undecoded, and next_min_ts bounds the starts still to come — what a
// reader of several files (a run merged on the fly, issue #38 item 1) uses to
// take the next chunk from the file that is furthest behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "testing/temp_file.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {
namespace {

// `n` kernels starting at `t0`, `step` apart, and one API call per kernel,
// 4 rows per chunk.
void WriteFile(const std::string& path, uint64_t t0, uint64_t step, int n) {
  SbtWriterOptions o;
  o.rows_per_chunk = 4;
  auto w = SbtWriter::Open(path, o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int i = 0; i < n; ++i) {
    model::KernelEvent k{};
    k.start_ns = t0 + i * step;
    k.end_ns = k.start_ns + step / 2;
    k.correlation_id = uint32_t(i + 1);
    (*w)->Append(k);
    model::ApiEvent a{};
    a.start_ns = k.start_ns - 1;
    a.end_ns = k.start_ns;
    a.correlation_id = k.correlation_id;
    (*w)->Append(a);
  }
  ASSERT_TRUE((*w)->Close().ok());
}

std::unique_ptr<SbtReader> Open(const std::string& path) {
  auto r = SbtReader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

TEST(EventCursor, ChunksInFileOrderEachClearedForTheNext) {
  testing::TempPath path(".sbt");
  WriteFile(path.path(), 1000, 100, 10);
  auto r = Open(path.path());
  ASSERT_NE(r, nullptr);
  SbtReader::EventCursor c = r->Events();
  EXPECT_EQ(c.next_min_ts(), 999u);  // the first API call
  std::vector<uint64_t> kernel_starts;
  uint64_t api = 0;
  model::TableKind kind;
  int chunks = 0;
  while (true) {
    auto more = c.Next(&kind);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    ++chunks;
    const auto& k = c.batch().Rows<model::KernelEvent>();
    const auto& a = c.batch().Rows<model::ApiEvent>();
    // Only the rows of this chunk's kind: the previous chunk's are gone.
    if (kind == model::TableKind::kKernel) {
      EXPECT_TRUE(a.empty());
      EXPECT_LE(k.size(), 4u);
      for (const auto& e : k) kernel_starts.push_back(e.start_ns);
    } else {
      ASSERT_EQ(kind, model::TableKind::kApi);
      EXPECT_TRUE(k.empty());
      api += a.size();
    }
  }
  EXPECT_EQ(chunks, 6);  // 3 + 3 chunks of at most 4 rows
  EXPECT_EQ(api, 10u);
  ASSERT_EQ(kernel_starts.size(), 10u);
  EXPECT_TRUE(std::is_sorted(kernel_starts.begin(), kernel_starts.end()));
  EXPECT_EQ(c.next_min_ts(), UINT64_MAX);
  EXPECT_TRUE(c.batch().Rows<model::KernelEvent>().empty());
  EXPECT_TRUE(c.batch().Rows<model::ApiEvent>().empty());
  auto again = c.Next(&kind);  // stays at the end
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(EventCursor, FilterSkipsChunksAndTheirStarts) {
  testing::TempPath path(".sbt");
  WriteFile(path.path(), 1000, 100, 10);
  auto r = Open(path.path());
  ASSERT_NE(r, nullptr);
  SbtReader::EventCursor c =
      r->Events([](model::TableKind k) { return k == model::TableKind::kKernel; });
  EXPECT_EQ(c.next_min_ts(), 1000u);  // the API chunks are not coming
  model::TableKind kind;
  uint64_t kernels = 0;
  while (true) {
    auto more = c.Next(&kind);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    EXPECT_EQ(kind, model::TableKind::kKernel);
    kernels += c.batch().Rows<model::KernelEvent>().size();
  }
  EXPECT_EQ(kernels, 10u);
  EXPECT_TRUE(r->report().damage.empty());
}

// Two files' chunks taken by next_min_ts: kernel starts come out in time order
// across the files (each file's chunks are in time order).
TEST(EventCursor, TwoFilesMergedByTheirNextStarts) {
  testing::TempPath a(".sbt"), b(".sbt");
  WriteFile(a.path(), 1000, 100, 12);  // 1000 .. 2100
  WriteFile(b.path(), 1050, 100, 12);  // 1050 .. 2150
  auto ra = Open(a.path()), rb = Open(b.path());
  ASSERT_TRUE(ra && rb);
  const auto kernels = [](model::TableKind k) { return k == model::TableKind::kKernel; };
  std::vector<SbtReader::EventCursor> cursors;
  cursors.push_back(ra->Events(kernels));
  cursors.push_back(rb->Events(kernels));
  std::vector<uint64_t> starts;
  model::TableKind kind;
  while (true) {
    auto it = std::min_element(cursors.begin(), cursors.end(), [](const auto& x, const auto& y) {
      return x.next_min_ts() < y.next_min_ts();
    });
    if (it->next_min_ts() == UINT64_MAX) break;
    auto more = it->Next(&kind);
    ASSERT_TRUE(more.ok() && *more);
    for (const auto& e : it->batch().Rows<model::KernelEvent>()) starts.push_back(e.start_ns);
  }
  ASSERT_EQ(starts.size(), 24u);
  // Chunk by chunk: each chunk's first start is not before the previous chunk's.
  std::vector<uint64_t> firsts;
  for (size_t i = 0; i < starts.size(); i += 4) firsts.push_back(starts[i]);
  EXPECT_TRUE(std::is_sorted(firsts.begin(), firsts.end()));
  EXPECT_EQ(firsts.front(), 1000u);
  EXPECT_EQ(firsts[1], 1050u);
}

// Stream is the same pass: the same rows, chunk by chunk.
TEST(EventCursor, StepEveryEventChunkStopsAtRefusedChunksToo) {
  testing::TempPath path(".sbt");
  WriteFile(path.path(), 1000, 100, 10);  // 3 kernel chunks, 3 API chunks
  auto r = Open(path.path());
  ASSERT_NE(r, nullptr);
  size_t event_chunks = 0;
  for (const ChunkIndexEntry& e : r->chunks())
    if (e.type == uint16_t(ChunkType::kTable) && e.table_kind != 0 &&
        e.table_kind < uint16_t(model::TableKind::kDevice))
      ++event_chunks;
  ASSERT_EQ(event_chunks, 6u);
  SbtReader::EventCursor c =
      r->Events([](model::TableKind k) { return k == model::TableKind::kKernel; });
  c.StepEveryEventChunk();
  model::TableKind kind;
  size_t steps = 0, over = 0, kernels = 0;
  while (true) {
    auto more = c.Next(&kind);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    ++steps;
    if (c.stepped_over()) {
      ++over;
      EXPECT_EQ(kind, model::TableKind::kApi);
      EXPECT_TRUE(c.batch().Rows<model::ApiEvent>().empty());
    } else {
      EXPECT_EQ(kind, model::TableKind::kKernel);
      kernels += c.batch().Rows<model::KernelEvent>().size();
      c.ReleaseRows();
      EXPECT_TRUE(c.batch().Rows<model::KernelEvent>().empty());
    }
  }
  EXPECT_EQ(steps, event_chunks);  // one stop per event chunk, whatever the filter
  EXPECT_EQ(over, 3u);
  EXPECT_EQ(kernels, 10u);
}

TEST(EventCursor, StreamGivesWhatTheCursorGives) {
  testing::TempPath path(".sbt");
  WriteFile(path.path(), 5000, 10, 9);
  auto r = Open(path.path());
  ASSERT_NE(r, nullptr);
  std::vector<size_t> streamed;
  ASSERT_TRUE(r->Stream([&](const model::Trace& batch, model::TableKind kind) {
                 streamed.push_back(kind == model::TableKind::kKernel
                                        ? batch.Rows<model::KernelEvent>().size()
                                        : 100 + batch.Rows<model::ApiEvent>().size());
                 return OkStatus();
               }).ok());
  std::vector<size_t> pulled;
  SbtReader::EventCursor c = r->Events();
  model::TableKind kind;
  for (auto more = c.Next(&kind); more.ok() && *more; more = c.Next(&kind))
    pulled.push_back(kind == model::TableKind::kKernel
                         ? c.batch().Rows<model::KernelEvent>().size()
                         : 100 + c.batch().Rows<model::ApiEvent>().size());
  EXPECT_EQ(streamed, pulled);
  EXPECT_EQ(streamed.size(), 6u);
}

}  // namespace
}  // namespace tracesmith::format
