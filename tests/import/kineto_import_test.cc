// The Kineto (torch.profiler) JSON importer on JSON that is not such a trace.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "testing/build_paths.h"
#include "tracesmith/import/import.h"

namespace tracesmith::importer {
namespace {

TEST(KinetoImport, JsonWithoutTraceEventsIsNotATrace) {
  for (const char* text : {"{}", R"({"name": "config", "steps": [1, 2]})", "[1, 2, 3]"}) {
    auto t = ImportKinetoJson(text);
    ASSERT_FALSE(t.ok()) << text << " imported as a trace";
    EXPECT_NE(t.status().message().find("not a torch.profiler trace"), std::string::npos)
        << t.status().ToString();
  }
}

TEST(KinetoImport, AnEmptyTraceIsStillATrace) {
  auto t = ImportKinetoJson(R"({"schemaVersion": 1, "traceEvents": []})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->EventCount(), 0u);
}

// Events are converted as they are parsed; what they depend on may come
// later in the file: baseTimeNanoseconds after traceEvents (as torch.profiler
// writes it), a kernel before the runtime call that launched it, a GPU's
// process_labels after its process_name.
TEST(KinetoImport, WhatComesLaterInTheFileStillApplies) {
  auto t = ImportKinetoJson(R"({"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
    {"ph": "M", "name": "process_name", "pid": 42, "tid": 0, "args": {"name": "python"}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2,
     "args": {"correlation": 5, "stream": 7, "device": 0, "grid": [4, 1, 1]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 9,
     "ts": 8, "dur": 1.25, "args": {"correlation": 5, "cbid": 211}},
    {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}],
    "baseTimeNanoseconds": 1000000000})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->Rows<model::KernelEvent>().size(), 1u);
  const model::KernelEvent& k = t->Rows<model::KernelEvent>()[0];
  EXPECT_EQ(k.start_ns, 1000010500u);
  EXPECT_EQ(k.end_ns, 1000012500u);
  EXPECT_EQ(k.pid, 42u);  // the launching process, from the runtime row after it
  EXPECT_EQ(k.grid_x, 4u);
  ASSERT_EQ(t->Rows<model::ApiEvent>().size(), 1u);
  EXPECT_EQ(t->Rows<model::ApiEvent>()[0].start_ns, 1000008000u);
  EXPECT_EQ(t->Rows<model::ApiEvent>()[0].end_ns, 1000009250u);
  ASSERT_EQ(t->Rows<model::Process>().size(), 1u);  // not the GPU's "process"
  EXPECT_EQ(t->Rows<model::Process>()[0].pid, 42u);
}

// ImportFile streams the JSON from the file in blocks (the text is never held
// whole): any split of the bytes gives the trace the whole text gives.
TEST(KinetoImport, StreamedInSmallPiecesGivesTheSameTrace) {
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 500; ++i) {
    text +=
        R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 42, "tid": 9, "ts": )" +
        std::to_string(10 + i * 5) + R"(.125, "dur": 1.5, "args": {"correlation": )" +
        std::to_string(i + 1) + "}},";
    text += R"({"ph": "X", "cat": "kernel", "name": "kérnel_)" + std::to_string(i % 7) +
            R"(", "pid": 0, "tid": 7, "ts": )" + std::to_string(12 + i * 5) +
            R"(, "dur": 2, "args": {"correlation": )" + std::to_string(i + 1) + R"(, "grid": [)" +
            std::to_string(i + 1) + ", 2, 3]}}" + (i < 499 ? "," : "");
  }
  text += R"(], "baseTimeNanoseconds": 7000})";
  auto whole = ImportKinetoJson(text);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}}) {
    size_t at = 0;
    auto streamed = ImportKinetoJsonStream([&](char* buf, size_t cap) {
      size_t n = std::min({piece, cap, text.size() - at});
      std::memcpy(buf, text.data() + at, n);
      at += n;
      return n;
    });
    ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
    const auto& a = whole->Rows<model::KernelEvent>();
    const auto& b = streamed->Rows<model::KernelEvent>();
    ASSERT_EQ(a.size(), 500u);
    ASSERT_EQ(b.size(), a.size()) << "pieces of " << piece;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(b[i].start_ns, a[i].start_ns);
      EXPECT_EQ(b[i].grid_x, a[i].grid_x);
      EXPECT_EQ(b[i].pid, 42u);
      EXPECT_EQ(streamed->strings.Get(b[i].name_id), whole->strings.Get(a[i].name_id));
    }
    EXPECT_EQ(streamed->Rows<model::ApiEvent>().size(), 500u);
  }
  // Cut short: the parse error names the byte where the document ends.
  size_t at = 0;
  auto cut = ImportKinetoJsonStream([&](char* buf, size_t cap) {
    size_t n = std::min(cap, 1000 - at);
    std::memcpy(buf, text.data() + at, n);
    at += n;
    return n;
  });
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("byte 1001"), std::string::npos) << cut.status().ToString();
}

// A parse error after a dropped whitespace run still names the input's byte.
TEST(KinetoImport, ErrorPositionCountsDroppedWhitespace) {
  const std::string text = R"({"traceEvents": [)" + std::string(10000, ' ') + "\n" +
                           std::string(9000, '\t') + R"({"ph": "X", "name": )";
  for (size_t piece : {size_t{7}, size_t{65536}}) {
    size_t at = 0;
    auto cut = ImportKinetoJsonStream([&](char* buf, size_t cap) {
      size_t n = std::min({piece, cap, text.size() - at});
      std::memcpy(buf, text.data() + at, n);
      at += n;
      return n;
    });
    ASSERT_FALSE(cut.ok());
    EXPECT_NE(cut.status().message().find("byte " + std::to_string(text.size() + 1)),
              std::string::npos)
        << cut.status().ToString();
  }
}

// Whitespace between tokens beyond 4 KiB is dropped as the JSON streams in
// (the parser would keep all of it until the next token: a gzip bomb of
// spaces took gigabytes); whitespace, quotes and backslashes inside strings
// are kept as they are, also when a string spans blocks.
TEST(KinetoImport, LongWhitespaceRunsAreDroppedButStringsKeptWhole) {
  const std::string spaces(100000, ' ');
  // JSON text k\\\" <spaces> \\ is the name k\" <spaces> \ (escapes across blocks).
  const std::string name = R"(k\\\" )" + spaces + R"( \\)";
  std::string head = R"({"traceEvents": [)" + spaces + "\n" + spaces +
                     R"({"ph": "X", "cat": "kernel", "name": ")" + name +
                     R"(", "pid": 0, "tid": 7, "ts": 12, "dur": 2, "args": {"correlation": 1}})";
  const uint64_t filler = uint64_t{256} << 20;  // 256 MiB of spaces, generated as read
  const std::string tail = "]}";
  const uint64_t total = head.size() + filler + tail.size();
  auto import = [&] {
    uint64_t at = 0;
    return ImportKinetoJsonStream([&](char* buf, size_t cap) {
      size_t n = 0;
      while (n < cap && at < total) {
        if (at < head.size())
          buf[n] = head[at];
        else if (at < head.size() + filler)
          buf[n] = (at % 64 == 0) ? '\n' : ' ';
        else
          buf[n] = tail[at - head.size() - filler];
        ++n, ++at;
      }
      return n;
    });
  };
  auto t = import();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->Rows<model::KernelEvent>().size(), 1u);
  EXPECT_EQ(t->strings.Get(t->Rows<model::KernelEvent>()[0].name_id), R"(k\" )" + spaces + R"( \)");
  // (ASan's allocator keeps freed memory: the bound is for the release build.)
  if (::tracesmith::testing::ProductUnderAsan()) return;
  // The filler is not held: the peak grew by far less than 256 MiB. Measured
  // in a child, whose high-water mark starts at its RSS when forked (this
  // process's may be higher already from earlier tests).
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    bool ok = import().ok();
    getrusage(RUSAGE_SELF, &after);
    _exit(!ok ? 2 : after.ru_maxrss - before.ru_maxrss < 64 * 1024 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the import failed, 3: its peak grew by 64 MiB or more";
}

}  // namespace
}  // namespace tracesmith::importer
