// A file of constant-column chunks (identical rows: every column stored
// once) claims millions of rows in a few KB. Reading it stops at the decode
// limit (256x the file + 1/8 of memory; here set to 64 MiB with
// TRACESMITH_MAX_DECODED_MB), with a message naming the override, in ReadAll
// and in Stream (whose consumers keep what it hands them): issue #21 item 6,
// where 4.4 KB became 13 M events and 825 MB in analyze.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {
namespace {

// 40 chunks of 131072 identical kernels: 5.2 M rows, ~700 MB decoded.
std::string ConstantFile(const testing::TempPath& path) {
  auto w = SbtWriter::Open(path.path(), SbtWriterOptions{});
  EXPECT_TRUE(w.ok());
  model::KernelEvent k{};
  k.start_ns = 1000;
  k.end_ns = 2000;
  k.correlation_id = 7;
  std::vector<model::KernelEvent> rows(kMaxRowsPerChunk, k);
  for (int i = 0; i < 40; ++i) (*w)->AppendRows(rows.data(), rows.size());
  EXPECT_TRUE((*w)->Close().ok());
  return path.path();
}

// Streams the file's kernels with TRACESMITH_MAX_DECODED_MB=limit_mb, then,
// with `read`, reads it whole (same limit); returns the stream's status.
Status StreamWithLimit(const std::string& path, const char* limit_mb, uint64_t* streamed,
                       Status* read) {
  setenv("TRACESMITH_MAX_DECODED_MB", limit_mb, 1);
  auto r = SbtReader::Open(path);
  EXPECT_TRUE(r.ok());
  Status st = (*r)->Stream([&](const model::Trace& batch, model::TableKind) {
    *streamed += batch.Rows<model::KernelEvent>().size();
    return OkStatus();
  });
  if (read) {
    model::Trace all;
    *read = (*r)->ReadAll(&all);
  }
  unsetenv("TRACESMITH_MAX_DECODED_MB");
  return st;
}

TEST(DecodeLimit, ConstantColumnChunksStopAtTheLimit) {
  testing::TempPath path(".sbt");
  ConstantFile(path);
  auto size = FileSize(path.path());
  ASSERT_TRUE(size.ok());
  ASSERT_LT(*size, 64u << 10) << "the forged file is small";
  uint64_t streamed = 0;
  Status read;
  Status st = StreamWithLimit(path.path(), "64", &streamed, &read);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("TRACESMITH_MAX_DECODED_MB"), std::string::npos) << st.message();
  EXPECT_LT(streamed * sizeof(model::KernelEvent), (64u << 20) + (20u << 20));
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.message().find("forged or corrupt"), std::string::npos) << read.message();
}

TEST(DecodeLimit, TheOverrideReadsItAll) {
  testing::TempPath path(".sbt");
  ConstantFile(path);
  uint64_t streamed = 0;
  Status st = StreamWithLimit(path.path(), "2048", &streamed, nullptr);  // (ReadAll: 700 MB)
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(streamed, 40u * kMaxRowsPerChunk);
}

}  // namespace
}  // namespace tracesmith::format
