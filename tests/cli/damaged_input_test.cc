// Damaged input is reported by every command that reads a trace: a warning on
// stderr that names the file, the damaged byte range and what was skipped
// (the command goes on with the readable part, exit 0), and with --strict an
// error (exit 1, nothing written). A footer index or trailer whose bytes are
// present but corrupt is damage too, not an unfinished file.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

using testing::TempDir;

bool Exists(const std::string& path) { return FileSize(path).ok(); }

// Every command line that reads a trace; %s is the trace (diff: either side).
const std::vector<std::string>& ReadingCommands() {
  static const std::vector<std::string> kCommands = {
      "view %s",
      "view --stats %s",
      "analyze %s",
      "analyze --json %s",
      "timeline --width 80 %s",
      "memory %s",
      "memory --json %s",
      "export %s -f perfetto -o OUT.pftrace",
      "export %s -f json -o OUT.json",
      "export %s -f csv -o OUT.csv",
      "export %s -f sqlite -o OUT.sqlite",
      "export %s -f dot -o OUT.dot",
      "diff GOOD %s",
      "diff %s GOOD",
      "replay --dry-run %s",
      "symbolize %s -o OUT.sbt",
  };
  return kCommands;
}

class DamagedInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model::SyntheticOptions o;
    o.kernels = 500;
    ASSERT_TRUE(
        format::WriteTraceFile(model::MakeSyntheticTrace(o), good_, {.rows_per_chunk = 64}).ok());
    const std::string bytes = ReadOrMissing(good_);
    // The first kernel chunk, where the footer index says it is.
    auto reader = format::SbtReader::Open(good_);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    for (const format::ChunkIndexEntry& e : (*reader)->chunks())
      if (e.type == uint16_t(format::ChunkType::kTable) &&
          e.table_kind == uint16_t(model::TableKind::kKernel)) {
        chunk_offset_ = e.offset;
        chunk_rows_ = e.rows;
        break;
      }
    ASSERT_GT(chunk_rows_, 0u);
    std::string damaged = bytes;
    damaged[chunk_offset_ + format::kChunkHeaderSize + 10] ^= 0x5a;  // inside its payload
    ASSERT_TRUE(WriteStringToFile(chunk_, damaged).ok());
    // The trailer's index offset, off by one: index and trailer are there but unusable.
    std::string trailer = bytes;
    trailer[trailer.size() - format::kTrailerSize] ^= 0x01;
    ASSERT_TRUE(WriteStringToFile(trailer_, trailer).ok());
  }

  // `command` with %s = `trace`, GOOD = the undamaged trace, OUT = a path in the test's directory.
  std::string Line(std::string command, const std::string& trace) const {
    command.replace(command.find("%s"), 2, trace);
    if (size_t p = command.find("GOOD"); p != std::string::npos) command.replace(p, 4, good_);
    if (size_t p = command.find("OUT"); p != std::string::npos) command.replace(p, 3, dir_ / "out");
    return command;
  }
  // The file `command` writes ("-o OUT.ext" ends the line), or "".
  std::string OutputOf(const std::string& command) const {
    size_t p = command.find("-o OUT");
    return p == std::string::npos ? "" : (dir_ / "out") + command.substr(p + 6);
  }

  // Every reading command warns about `trace` (exit 0, `expected` in the
  // warning) and fails with --strict, writing nothing.
  void ExpectEveryCommandReports(const std::string& trace, const std::string& expected) {
    for (const std::string& command : ReadingCommands()) {
      SCOPED_TRACE(command);
      const std::string out = OutputOf(command);
      Result r = RunTracesmith(Line(command, trace));
      EXPECT_EQ(r.status, 0) << r.out;
      EXPECT_NE(r.out.find("tracesmith: warning: " + trace + " is damaged ("), std::string::npos)
          << r.out;
      EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
      if (!out.empty()) std::remove(out.c_str());

      Result strict = RunTracesmith(Line(command, trace) + " --strict");
      EXPECT_EQ(strict.status, 1) << strict.out;
      EXPECT_NE(strict.out.find("tracesmith: error: " + trace + " is damaged ("), std::string::npos)
          << strict.out;
      EXPECT_NE(strict.out.find(expected), std::string::npos) << strict.out;
      EXPECT_EQ(strict.out.find("warning"), std::string::npos) << strict.out;
      if (!out.empty()) {
        EXPECT_FALSE(Exists(out)) << "--strict wrote " << out;
      }
      // The undamaged trace passes --strict.
      if (command.rfind("diff", 0) != 0) {
        Result clean = RunTracesmith(Line(command, good_) + " --strict");
        EXPECT_EQ(clean.status, 0) << clean.out;
        EXPECT_EQ(clean.out.find("damaged"), std::string::npos) << clean.out;
      }
    }
  }

  TempDir dir_;
  const std::string good_ = dir_ / "good.sbt";
  const std::string chunk_ = dir_ / "chunk.sbt";
  const std::string trailer_ = dir_ / "trailer.sbt";
  uint64_t chunk_offset_ = 0, chunk_rows_ = 0;
};

TEST_F(DamagedInputTest, DamagedChunkIsReportedByEveryCommand) {
  // Where (byte offset), why, and how many events the index says were skipped.
  ExpectEveryCommandReports(chunk_, "byte " + std::to_string(chunk_offset_) + " (0x");
  Result r = RunTracesmith("analyze " + chunk_);
  EXPECT_NE(r.out.find("payload checksum mismatch (" + std::to_string(chunk_rows_) +
                       " kernel events skipped)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", " + std::to_string(chunk_rows_) + " events skipped)"), std::string::npos)
      << r.out;
}

TEST_F(DamagedInputTest, DamagedTrailerIsReportedByEveryCommand) {
  ExpectEveryCommandReports(trailer_, "footer index or trailer is corrupt");
}

TEST_F(DamagedInputTest, InfoCallsADamagedTrailerDamageNotUnfinished) {
  Result r = RunTracesmith("info " + trailer_);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("unfinished"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("footer index damaged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("footer index or trailer is corrupt"), std::string::npos) << r.out;
  EXPECT_EQ(RunTracesmith("info --strict " + trailer_).status, 1);
}

TEST_F(DamagedInputTest, InfoCountsTheEventsOfADamagedChunk) {
  Result r = RunTracesmith("info " + chunk_);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(StrFormat("  %-34s %llu  (DATA LOSS)", "events_lost",
                                 static_cast<unsigned long long>(chunk_rows_))),
            std::string::npos)
      << r.out;
  EXPECT_EQ(RunTracesmith("info --strict " + chunk_).status, 1);
}

// A trace whose writer stopped after its last whole chunk is unfinished, not damaged.
TEST_F(DamagedInputTest, UnfinishedTraceIsNotDamage) {
  // Cut where the index chunk starts (the trailer says where): every chunk
  // before it is whole.
  const std::string bytes = ReadOrMissing(good_);
  uint64_t index_offset = 0;
  std::memcpy(&index_offset, bytes.data() + bytes.size() - format::kTrailerSize, 8);
  ASSERT_GT(index_offset, chunk_offset_);
  ASSERT_LT(index_offset, bytes.size());
  const std::string cut = dir_ / "cut.sbt";
  ASSERT_TRUE(WriteStringToFile(cut, bytes.substr(0, index_offset)).ok());
  Result r = RunTracesmith("info --strict " + cut);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("unfinished"), std::string::npos) << r.out;
  Result a = RunTracesmith("analyze --strict " + cut);
  EXPECT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(a.out.find("damaged"), std::string::npos) << a.out;
}

// diff says, in its own output, which side is damaged and that the comparison
// covers only the readable part.
TEST_F(DamagedInputTest, DiffSaysWhichSideIsPartial) {
  Result r = RunTracesmith("diff " + good_ + " " + chunk_);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Warning: B: " + chunk_ + " is damaged ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("this comparison covers only its readable part"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Warning: A:"), std::string::npos) << r.out;
  const std::string json = dir_ / "diff.json";
  Result j = RunTracesmith("diff --json " + chunk_ + " " + good_ + " >" + json);
  ASSERT_EQ(j.status, 0) << j.out;
  // The file holds stderr's warning too (RunTracesmith adds 2>&1), before the JSON.
  const std::string text = ReadOrMissing(json);
  ASSERT_NE(text.find("\n{"), std::string::npos) << text;
  nlohmann::json d =
      nlohmann::json::parse(text.substr(text.find("\n{")), nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(d.is_object()) << text;
  ASSERT_TRUE(d["warnings"].is_array()) << d.dump();
  ASSERT_EQ(d["warnings"].size(), 1u) << d.dump();
  EXPECT_EQ(d["warnings"][0].get<std::string>().rfind("A: " + chunk_ + " is damaged (", 0), 0u)
      << d.dump();
}

// symbolize rewrites its input by default: on a damaged trace that would drop
// the damaged bytes for good, so it asks for -o instead.
TEST_F(DamagedInputTest, SymbolizeDoesNotRewriteADamagedTraceInPlace) {
  const std::string before = ReadOrMissing(chunk_);
  Result r = RunTracesmith("symbolize " + chunk_);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("-o"), std::string::npos) << r.out;
  EXPECT_EQ(ReadOrMissing(chunk_), before);
}

}  // namespace
}  // namespace tracesmith
