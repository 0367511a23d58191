// Commands that read a whole trace stay within bounded memory (issue #21
// item 8; `tracesmith benchmark scale` measures them at 10 M kernels):
//   timeline    streams the file: one chunk plus a row of buckets per lane;
//   info        streams, and gives back the file's mapped pages as it goes,
//               also while it scans a damaged stretch for the next chunk;
//   analyze, replay --dry-run   keep compact per-event records, and less of
//               them than before (bounds between the old and the new peak).
// Peak RSS is the child's own (measured_run.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "cli/measured_run.h"
#include "testing/temp_dir.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

// The benchmarks' synthetic trace (model/synthetic.h), 1 M kernels with
// their launch calls, copies, syncs and NVTX ranges: 2.06 M events, 8 MB.
std::string SyntheticMillion(const testing::TempDir& dir) {
  const std::string path = dir / "synthetic.sbt";
  model::SyntheticOptions so;
  so.kernels = 1'000'000;
  model::SyntheticTraceGenerator gen(so);
  auto writer = format::SbtWriter::Open(path);
  EXPECT_TRUE(writer.ok());
  (*writer)->AdoptStrings(gen.strings());
  model::Trace batch;
  while (gen.Next(&batch)) {
    model::ForEachRecordType([&]<typename T>() {
      auto& rows = batch.Rows<T>();
      (*writer)->AppendRows(rows.data(), rows.size());
      rows.clear();
    });
  }
  EXPECT_TRUE((*writer)->Close().ok());
  return path;
}

// 2 M kernels whose every field is random: nothing compresses, so the file
// is large (about 88 MB) and a reader that keeps its mapped pages keeps it
// all.
std::string IncompressibleKernels(const testing::TempDir& dir) {
  const std::string path = dir / "random.sbt";
  auto w = format::SbtWriter::Open(path, format::SbtWriterOptions{});
  EXPECT_TRUE(w.ok());
  std::mt19937_64 rng(7);
  std::vector<model::KernelEvent> rows(format::kMaxRowsPerChunk);
  for (size_t i = 0; i < 16; ++i) {
    for (size_t j = 0; j < rows.size(); ++j) {
      const uint64_t n = i * rows.size() + j;
      model::KernelEvent& k = rows[j];
      k.start_ns = 1'000'000 + n * 1000 + rng() % 500;
      k.end_ns = k.start_ns + rng() % 500;
      k.correlation_id = uint32_t(rng());
      k.grid_x = uint32_t(rng()), k.grid_y = uint32_t(rng()), k.grid_z = uint32_t(rng());
      k.block_x = uint32_t(rng()), k.block_y = uint32_t(rng()), k.block_z = uint32_t(rng());
      k.registers_per_thread = uint32_t(rng());
      k.pid = 7;
    }
    (*w)->AppendRows(rows.data(), rows.size());
  }
  EXPECT_TRUE((*w)->Close().ok());
  return path;
}

// Bounds from the dev VM (release build), old -> new peak RSS on the
// synthetic trace: timeline 121 -> 25 MB, analyze 166 -> 113 MB, replay
// --dry-run 369 -> 241 -> 94 MB (the graph no longer materialised: 241 MB
// fails the bound); info on the incompressible file, see below.
// Under ASan (its allocator's own overhead, quarantine cut to 16 MB) only
// the streaming commands are held to a bound: the others' overhead grows
// with every allocation.
const bool kAsan = ::tracesmith::testing::ProductUnderAsan();
const long kStreamingKib = (kAsan ? 320 : 64) * 1024;

TEST(ScaleMemory, TimelineStreamsTheFile) {
  testing::TempDir dir;
  const std::string path = SyntheticMillion(dir);
  long peak = 0;
  const std::string text = RunMeasured(dir, {"timeline", path, "--width", "100"}, &peak);
  EXPECT_NE(text.find("GPU 0 stream"), std::string::npos) << text;
  EXPECT_NE(text.find("1 char = "), std::string::npos) << text;
  EXPECT_LT(peak, kStreamingKib) << "KiB peak RSS of timeline on 1 M kernels";
  const std::string window =
      RunMeasured(dir, {"timeline", path, "--from", "1s", "--to", "2s"}, &peak);
  EXPECT_NE(window.find("GPU 0 stream"), std::string::npos) << window;
  EXPECT_LT(peak, kStreamingKib) << "KiB peak RSS of timeline --from --to";
}

// The file's pages are given back as the chunks are decoded: without that,
// the whole mapped file (about 88 MB here) stayed resident.
TEST(ScaleMemory, InfoDoesNotKeepTheMappedFile) {
  testing::TempDir dir;
  const std::string path = IncompressibleKernels(dir);
  struct stat sb {};
  ASSERT_EQ(::stat(path.c_str(), &sb), 0);
  ASSERT_GT(sb.st_size, 80 << 20) << "the file must be larger than the bound";
  long peak = 0;
  const std::string text = RunMeasured(dir, {"info", path}, &peak);
  EXPECT_NE(text.find("kernel          2097152"), std::string::npos) << text;
  EXPECT_LT(peak, kStreamingKib) << "KiB peak RSS of info on a " << sb.st_size << "-byte file";
}

// A trace followed by 512 MB of zeros (a sparse file: holes cost no disk):
// the reader scans the zeros for a chunk header without keeping them
// resident (before, the whole tail was paged in: RSS about the file's size).
TEST(ScaleMemory, SparseTailIsNotPagedIn) {
  // Under ASan the scanned pages stayed resident (622 MB on the dev VM, not
  // investigated: the memchr path is ASan-intercepted); Stream's release
  // holds under ASan (the test above).
  if (kAsan) GTEST_SKIP() << "the scan's bound is for the release build";
  testing::TempDir dir;
  const std::string path = dir / "sparse.sbt";
  {
    auto w = format::SbtWriter::Open(path, format::SbtWriterOptions{});
    ASSERT_TRUE(w.ok());
    std::vector<model::KernelEvent> rows(1000);
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i].start_ns = 1000 + i * 100;
      rows[i].end_ns = rows[i].start_ns + 50;
      rows[i].pid = 7;
    }
    (*w)->AppendRows(rows.data(), rows.size());
    ASSERT_TRUE((*w)->Close().ok());
  }
  ASSERT_EQ(::truncate(path.c_str(), off_t(512) << 20), 0);
  long peak = 0;
  const std::string text = RunMeasured(dir, {"info", path}, &peak);
  EXPECT_NE(text.find("Events:      1000\n"), std::string::npos) << text;
  EXPECT_LT(peak, kStreamingKib) << "KiB peak RSS of info on a trace with a 512 MB sparse tail";
}

TEST(ScaleMemory, AnalyzeAndDryRunInLessMemory) {
  if (kAsan) GTEST_SKIP() << "bounds are for the release build's allocator";
  testing::TempDir dir;
  const std::string path = SyntheticMillion(dir);
  long peak = 0;
  std::string text = RunMeasured(dir, {"analyze", path}, &peak);
  EXPECT_NE(text.find("Window:"), std::string::npos) << text.substr(0, 2000);
  EXPECT_LT(peak, 140 * 1024) << "KiB peak RSS of analyze on 1 M kernels (was 166 MB)";
  text = RunMeasured(dir, {"replay", path, "--dry-run"}, &peak);
  EXPECT_NE(text.find("Schedule emulation"), std::string::npos) << text.substr(0, 2000);
  EXPECT_LT(peak, 130 * 1024) << "KiB peak RSS of replay --dry-run on 1 M kernels (was 241 MB)";
  // --streams makes half-nodes wait for predecessors recorded later: still bounded.
  text =
      RunMeasured(dir, {"replay", path, "--dry-run", "--streams", "1", "--schedule", "3"}, &peak);
  EXPECT_NE(text.find("vstream 0"), std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(text.find("predicted schedule (first 3 ops"), std::string::npos)
      << text.substr(0, 2000);
  EXPECT_LT(peak, 130 * 1024) << "KiB peak RSS of replay --dry-run --streams 1 on 1 M kernels";
}

}  // namespace
}  // namespace tracesmith
