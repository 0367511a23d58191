// ExportKinetoRankDirectory: one Kineto JSON file per process with the
// distributedInfo HTA reads a multi-rank directory by (rank, unique, >= 0).
#include "tracesmith/export/rank_directory.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cluster/test_jobs.h"
#include "testing/synthetic_job_files.h"
#include "testing/temp_dir.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic_job.h"

namespace tracesmith::exporter {
namespace {

using testing::MakeRankTrace;
using testing::RankSpec;
using testing::TempDir;

nlohmann::json ReadJson(const std::string& path) {
  std::string text;
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (f == nullptr) return nlohmann::json();
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return nlohmann::json::parse(text, nullptr, false);
}

// The pids of the host-side rows (GPU rows use the device as their pid).
std::set<uint32_t> HostPids(const nlohmann::json& doc) {
  std::set<uint32_t> pids;
  for (const auto& e : doc["traceEvents"])
    if (e.value("cat", "") == "cuda_runtime" || e.value("cat", "") == "cpu_op")
      pids.insert(e["pid"].get<uint32_t>());
  return pids;
}

// A trace holding two processes (as a merged file does) and one more file.
std::vector<std::string> WriteJob(const TempDir& dir) {
  model::Trace both = MakeRankTrace(RankSpec{.pid = 11, .rank = 1});
  {
    // pid 12: no rank (captured without RANK), appended with its own strings.
    const model::Trace other = MakeRankTrace(RankSpec{.pid = 12, .rank = -1});
    std::vector<uint32_t> ids(other.strings.size());
    for (uint32_t i = 0; i < other.strings.size(); ++i)
      ids[i] = both.strings.Intern(other.strings.Get(i));
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (model::RecordTraits<T>::kIsEvent || std::is_same_v<T, model::Process> ||
                    std::is_same_v<T, model::Thread> || std::is_same_v<T, model::Device>)
        for (T row : other.Rows<T>()) {
          if constexpr (requires { row.name_id; }) row.name_id = ids[row.name_id];
          if constexpr (requires { row.hostname_id; }) row.hostname_id = ids[row.hostname_id];
          if constexpr (requires { row.domain_id; }) row.domain_id = ids[row.domain_id];
          if constexpr (requires { row.demangled_id; }) row.demangled_id = ids[row.demangled_id];
          if constexpr (requires { row.stack_id; }) row.stack_id = 0;
          if constexpr (requires { row.flow_out_id; }) row.flow_out_id = row.flow_in_id = 0;
          both.Rows<T>().push_back(row);
        }
    });
  }
  // World size and backend of rank 1, as metadata.
  both.Rows<model::MetadataEntry>().push_back({.key_id = both.strings.Intern(kWorldSizeKey),
                                               .value_id = both.strings.Intern("3"),
                                               .pid = 11});
  both.Rows<model::MetadataEntry>().push_back({.key_id = both.strings.Intern(kBackendKey),
                                               .value_id = both.strings.Intern("nccl"),
                                               .pid = 11});
  const std::string a = dir / "both.sbt", b = dir / "rank0.sbt";
  EXPECT_TRUE(format::WriteTraceFile(both, a).ok());
  EXPECT_TRUE(testing::WriteStreamed(MakeRankTrace(RankSpec{.pid = 10, .rank = 0}), b).ok());
  return {a, b};
}

TEST(RankDirectory, OneFilePerProcessWithItsRank) {
  TempDir dir;
  const std::vector<std::string> inputs = WriteJob(dir);
  auto r = ExportKinetoRankDirectory(inputs, dir / "hta", ExportOptions{}, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->files.size(), 3u);
  // Ranks as recorded; the process without one gets the lowest free rank.
  EXPECT_EQ(r->files[0].pid, 10u);
  EXPECT_EQ(r->files[1].pid, 11u);
  EXPECT_EQ(r->files[2].pid, 12u);
  EXPECT_TRUE(r->files[2].rank_assigned);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0], "pid 12 of " + inputs[0] +
                             " has no rank (no launcher set a rank variable when it was captured): "
                             "written as rank-2.json");
  const uint32_t pids[] = {10, 11, 12};
  for (int rank = 0; rank < 3; ++rank) {
    const nlohmann::json doc = ReadJson(dir / ("hta/rank-" + std::to_string(rank) + ".json"));
    ASSERT_TRUE(doc.is_object()) << rank;
    EXPECT_EQ(doc["distributedInfo"]["rank"], rank);
    EXPECT_EQ(HostPids(doc), std::set<uint32_t>{pids[rank]}) << rank;
    EXPECT_EQ(r->files[rank].path, dir / ("hta/rank-" + std::to_string(rank) + ".json"));
    EXPECT_GT(r->files[rank].events, 0u);
  }
  EXPECT_EQ(ReadJson(dir / "hta/rank-1.json")["distributedInfo"],
            nlohmann::json({{"backend", "nccl"}, {"rank", 1}, {"world_size", 3}}));
  EXPECT_EQ(ReadJson(dir / "hta/rank-0.json")["distributedInfo"], nlohmann::json({{"rank", 0}}));
  // Every event of the inputs is in exactly one file.
  uint64_t events = 0;
  for (const RankFile& f : r->files) events += f.events;
  EXPECT_EQ(events, format::ReadTraceFile(inputs[0])->EventCount() +
                        format::ReadTraceFile(inputs[1])->EventCount());
}

// torchrun's agent (no rank, no GPU work) is captured beside the ranks: the
// Kineto directory leaves it out as `analyze` does (issue #41 item 4: HTA's
// default load of the directory failed on it, KeyError 'dur').
TEST(RankDirectory, ALauncherIsLeftOutAsAnalyzeLeavesItOut) {
  model::SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 2);
  o.steps = 3;
  const model::SyntheticJob job(o);
  TempDir dir;
  std::vector<std::string> files = testing::WriteRanks(job, dir);
  files.push_back(dir / "run.sbt");
  ASSERT_TRUE(format::WriteTraceFile(job.LauncherTrace(999), files.back()).ok());
  auto r = ExportKinetoRankDirectory(files, dir / "hta", ExportOptions{}, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->files.size(), 2u);
  EXPECT_EQ(r->files[0].rank, 0);
  EXPECT_EQ(r->files[1].rank, 1);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0], "pid 999 of " + files.back() +
                             " left out: no rank and no GPU work (a launcher?), as analyze leaves "
                             "it out");
  EXPECT_FALSE(PathExists(dir / "hta/rank-2.json"));
  // Alone, a trace without GPU work is still exported (nothing to compare it with).
  const std::vector<std::string> launcher_only = {files.back()};
  auto alone = ExportKinetoRankDirectory(launcher_only, dir / "alone", ExportOptions{}, false);
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(alone->files.size(), 1u);
}

// A file with kernels but no process rows (an old capture, an import) is one
// process with GPU work, not a launcher (review of 2026-11-29).
TEST(RankDirectory, AFileWithoutProcessRowsKeepsItsGpuWork) {
  TempDir dir;
  const std::string ranked = dir / "rank0.sbt", bare = dir / "bare.sbt";
  ASSERT_TRUE(testing::WriteStreamed(MakeRankTrace(RankSpec{.pid = 10, .rank = 0}), ranked).ok());
  model::Trace t;
  model::KernelEvent k;
  k.start_ns = 1000;
  k.end_ns = 2000;
  t.Rows<model::KernelEvent>().assign(3, k);
  ASSERT_TRUE(format::WriteTraceFile(t, bare).ok());
  const std::vector<std::string> inputs = {ranked, bare};
  auto r = ExportKinetoRankDirectory(inputs, dir / "hta", ExportOptions{}, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files.size(), 2u);
}

TEST(RankDirectory, ExistingFilesDuplicateRanksAndStrangers) {
  TempDir dir;
  const std::vector<std::string> inputs = WriteJob(dir);
  ASSERT_TRUE(ExportKinetoRankDirectory(inputs, dir / "hta", ExportOptions{}, false).ok());
  // Again: refused before anything is written, unless overwrite.
  auto again = ExportKinetoRankDirectory(inputs, dir / "hta", ExportOptions{}, false);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("file exists"), std::string::npos);
  ASSERT_TRUE(WriteStringToFile(dir / "hta/old-rank.json", "{}").ok());
  auto replaced = ExportKinetoRankDirectory(inputs, dir / "hta/", ExportOptions{}, true);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  ASSERT_EQ(replaced->notes.size(), 2u);
  EXPECT_EQ(replaced->notes[1], dir / "hta/old-rank.json" +
                                    " is not from this export, and HTA reads it as a rank too: "
                                    "remove it or export into an empty directory");
  // Two processes claiming rank 0: an error, nothing written.
  const std::string twin = dir / "twin.sbt";
  ASSERT_TRUE(testing::WriteStreamed(MakeRankTrace(RankSpec{.pid = 99, .rank = 0}), twin).ok());
  auto dup =
      ExportKinetoRankDirectory(std::vector{inputs[1], twin}, dir / "dup", ExportOptions{}, false);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().message(),
            "rank 0 is both pid 10 of " + inputs[1] + " and pid 99 of " + twin +
                ": a rank directory holds one trace per rank (traces of two jobs?); export them "
                "apart");
  EXPECT_FALSE(PathExists(dir / "dup"));
  // A file where the directory should be.
  auto file = ExportKinetoRankDirectory(inputs, inputs[1], ExportOptions{}, true);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("not a directory"), std::string::npos);
}

// NCCL kernels carry torch.profiler's collective args from NCCL's NVTX
// payloads: name, dtype, element counts in and out (all-gather's out and
// reduce-scatter's in are the group's), group size; other kernels none.
TEST(KinetoCollectives, NcclKernelsCarryTheirPayloadsArgs) {
  model::SyntheticJobOptions o = model::MakeSyntheticJobOptions(4, 4);
  o.steps = 2;
  o.nccl_payloads = true;
  const model::SyntheticJob job(o);
  TempDir dir;
  const std::string out = dir / "rank1.json";
  auto r = ExportTrace(job.RankTrace(1), ExportFormat::kJson, out, ExportOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const nlohmann::json doc = ReadJson(out);
  std::map<std::string, int> by_name;
  int plain = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    const auto& a = e["args"];
    if (!a.contains("Collective name")) {
      ++plain;
      EXPECT_EQ(e["name"].get<std::string>().find("nccl"), std::string::npos) << e;
      continue;
    }
    const std::string name = a["Collective name"];
    ++by_name[name];
    EXPECT_EQ(a["Group size"], 4) << e;
    EXPECT_EQ(a["Rank in group"], 1) << e;
    // The schedule: all-reduce 8 MiB, all-gather 2 MiB (output), reduce-scatter 4 MiB
    // (input); NCCL's message size is per rank for the last two.
    const uint64_t bytes = a["Message size [bytes]"];
    if (name == "allgather") {  // NCCL names no datatype in all-gather kernels: no dtype
      EXPECT_EQ(bytes, 512u << 10);
      EXPECT_FALSE(a.contains("dtype")) << e;
      continue;
    }
    EXPECT_EQ(a["dtype"], "Float") << e;
    const uint64_t in = a["In msg nelems"], out_n = a["Out msg nelems"];
    using P = std::pair<uint64_t, uint64_t>;
    EXPECT_EQ(P(in, out_n), name == "allreduce" ? P(2u << 20, 2u << 20) : P(1u << 20, 256u << 10));
    EXPECT_EQ(bytes, name == "allreduce" ? 8u << 20 : 1u << 20);
  }
  EXPECT_EQ(by_name, (std::map<std::string, int>{
                         {"allgather", 2}, {"allreduce", 2}, {"reduce_scatter", 2}}));
  EXPECT_GT(plain, 0);
}

TEST(RankDirectory, Gzip) {
  TempDir dir;
  const std::vector<std::string> inputs = WriteJob(dir);
  ExportOptions o;
  o.gzip = true;
  auto r = ExportKinetoRankDirectory(inputs, dir / "gz", o, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files[1].path, dir / "gz/rank-1.json.gz");
  EXPECT_EQ(ReadJson(r->files[1].path)["distributedInfo"]["rank"], 1);
}

}  // namespace
}  // namespace tracesmith::exporter
