// MergeTraces: every row of every input in the output with the same
// strings, stacks, mappings and process; ids that collide across files kept
// apart; damaged inputs, --strict, and the output rules.
#include "tracesmith/cluster/merge.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "cluster/test_jobs.h"
#include "testing/temp_dir.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/cluster/id_fields.h"
#include "tracesmith/format/sbt.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::cluster {
namespace {

using namespace model;
using testing::MakeRankTrace;
using testing::RankSpec;
using testing::TempDir;
using testing::WriteStreamed;

// A row written out with every id resolved to what it names: strings as
// text, a stack as its frames (function, file, line, library), a pid as the
// output process it must be (`pids`). Rows of two files compare equal when
// they say the same thing, whatever ids each file gave them.
template <typename T>
std::string Resolved(const Trace& t, const T& row, const std::map<uint32_t, uint32_t>& pids) {
  auto frame_text = [&](uint32_t id) {
    if (id == 0 || id > t.Rows<Frame>().size()) return std::string("?");
    const Frame& f = t.Rows<Frame>()[id - 1];
    std::string lib;
    for (const Mapping& m : t.Rows<Mapping>())
      if (f.mapping_id != 0 && m.mapping_id == f.mapping_id) lib = t.strings.Get(m.path_id);
    return std::string(t.strings.Get(f.function_id)) + "@" + std::string(t.strings.Get(f.file_id)) +
           ":" + std::to_string(f.line) + "+" + std::to_string(f.rel_pc) + "[" + lib + "]";
  };
  std::string s = RecordTraits<T>::kLabel;
  for (size_t i = 0; i < RecordTraits<T>::kNumFields; ++i) {
    const FieldDesc& f = RecordTraits<T>::kAllFields[i];
    const uint64_t v = LoadField(&row, f);
    s += std::string(" ") + f.name + "=";
    switch (ClassifyField(f.name).value()) {
      case IdSpace::kString:
        s += "'" + std::string(t.strings.Get(static_cast<uint32_t>(v))) + "'";
        break;
      case IdSpace::kStackNode:
        for (uint32_t fr : StackFrames(t, static_cast<uint32_t>(v))) s += frame_text(fr) + ";";
        break;
      case IdSpace::kFrame:
        s += frame_text(static_cast<uint32_t>(v));
        break;
      case IdSpace::kPid: {
        auto it = pids.find(static_cast<uint32_t>(v));
        s += std::to_string(it == pids.end() ? v : it->second);
        break;
      }
      case IdSpace::kMapping:
      case IdSpace::kFlow:  // checked by FlowsStayWithinTheirProcess
        s += v ? "set" : "0";
        break;
      default:
        s += std::to_string(v);
    }
  }
  return s;
}

// Resolved rows of every kind but the tables they point into (frames, stack
// nodes, mappings) and the merge's own metadata rows.
std::multiset<std::string> Rows(const Trace& t, const std::map<uint32_t, uint32_t>& pids = {}) {
  std::multiset<std::string> out;
  ForEachRecordType([&]<typename T>() {
    if constexpr (!std::is_same_v<T, Frame> && !std::is_same_v<T, StackNode> &&
                  !std::is_same_v<T, Mapping>)
      for (const T& row : t.Rows<T>()) {
        if constexpr (std::is_same_v<T, MetadataEntry>)
          if (t.strings.Get(row.key_id).starts_with("merge.")) continue;
        if constexpr (std::is_same_v<T, Stat>)  // a damaged input's (merge.input_*)
          if (t.strings.Get(row.name_id).starts_with("merge.")) continue;
        out.insert(Resolved(t, row, pids));
      }
  });
  return out;
}

Trace Read(const std::string& path) {
  auto t = format::ReadTraceFile(path);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(*t) : Trace();
}

std::string WriteRank(const TempDir& dir, const std::string& name, const RankSpec& spec) {
  const std::string path = dir / name;
  EXPECT_TRUE(WriteStreamed(MakeRankTrace(spec), path).ok());
  return path;
}

std::string MetadataValue(const Trace& t, uint32_t pid, std::string_view key) {
  for (const MetadataEntry& m : t.Rows<MetadataEntry>())
    if (m.pid == pid && t.strings.Get(m.key_id) == key)
      return std::string(t.strings.Get(m.value_id));
  return "<none>";
}

TEST(Merge, EveryRowOfEveryInputIsInTheOutputWithWhatItNames) {
  TempDir dir;
  std::vector<std::string> inputs;
  for (int r = 0; r < 4; ++r)
    inputs.push_back(WriteRank(
        dir, "run.rank" + std::to_string(r) + ".sbt",
        RankSpec{
            .pid = 100u + r, .rank = r, .host = r < 2 ? "h1" : "h2", .kernels = 150u + 40u * r}));
  auto merged = MergeTraces(inputs, dir / "job.sbt");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_TRUE(merged->notes.empty()) << merged->notes[0];
  const Trace out = Read(dir / "job.sbt");

  std::multiset<std::string> expected;
  std::map<std::string, uint64_t> events_by_kind;
  uint64_t events = 0;
  for (size_t r = 0; r < inputs.size(); ++r) {
    const Trace t = Read(inputs[r]);
    // The input's file-level stat (pid 0) goes to its process.
    for (const std::string& row : Rows(t, {{0u, 100u + uint32_t(r)}})) expected.insert(row);
    ForEachRecordType([&]<typename T>() {
      if constexpr (RecordTraits<T>::kIsEvent) {
        events_by_kind[RecordTraits<T>::kLabel] += t.Rows<T>().size();
        events += t.Rows<T>().size();
      }
    });
  }
  const std::multiset<std::string> got = Rows(out);
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "rows differ";
  // Counts per kind, and the summary's.
  EXPECT_EQ(merged->events, events);
  EXPECT_EQ(out.EventCount(), events);
  std::map<std::string, uint64_t> summed;
  for (const MergedInput& in : merged->inputs)
    for (const auto& [kind, n] : in.events_by_kind) summed[kind] += n;
  for (const auto& [kind, n] : events_by_kind)
    if (n) {
      EXPECT_EQ(summed[kind], n) << kind;
    }
  // The processes keep pid, rank and host, and say where they came from.
  ASSERT_EQ(out.Rows<Process>().size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const Process& p = out.Rows<Process>()[r];
    EXPECT_EQ(p.pid, 100u + r);
    EXPECT_EQ(p.rank, r);
    EXPECT_EQ(out.strings.Get(p.hostname_id), r < 2 ? "h1" : "h2");
    EXPECT_EQ(MetadataValue(out, p.pid, kMergeSourceKey), inputs[r]);
  }
  // The file-level stat of each input went to its process.
  for (const Stat& s : out.Rows<Stat>()) EXPECT_NE(s.pid, 0u);
  EXPECT_EQ(merged->Describe(), StrFormat("4 traces (ranks 0-3 on hosts h1, h2), %llu events",
                                          static_cast<unsigned long long>(events)));
  // Mappings are numbered anew, densely: each library once per process.
  ASSERT_EQ(out.Rows<Mapping>().size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(out.Rows<Mapping>()[i].mapping_id, i + 1);
}

TEST(Merge, FlowsStayWithinTheirProcess) {
  TempDir dir;
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 1, .rank = 0});
  const std::string b = WriteRank(dir, "b.sbt", RankSpec{.pid = 2, .rank = 1});
  ASSERT_TRUE(MergeTraces(std::vector{a, b}, dir / "m.sbt").ok());
  const Trace out = Read(dir / "m.sbt");
  // Both inputs use flow ids 1 and 2: in the output each id joins two ranges
  // of one process.
  std::map<uint32_t, std::set<uint32_t>> pids_of_flow;
  std::map<uint32_t, int> ends;
  for (const NvtxRangeEvent& r : out.Rows<NvtxRangeEvent>()) {
    for (uint32_t id : {r.flow_out_id, r.flow_in_id})
      if (id) pids_of_flow[id].insert(r.pid), ends[id]++;
  }
  ASSERT_EQ(pids_of_flow.size(), 4u);
  for (const auto& [id, pids] : pids_of_flow) {
    EXPECT_EQ(pids.size(), 1u) << "flow " << id;
    EXPECT_EQ(ends[id], 2) << "flow " << id;
  }
}

TEST(Merge, APidTwoInputsShareIsRenumberedAndSaidSo) {
  TempDir dir;
  // The same pid on two hosts, and again on one host in another capture.
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 4242, .rank = 0, .host = "h1"});
  const std::string b = WriteRank(dir, "b.sbt", RankSpec{.pid = 4242, .rank = 1, .host = "h2"});
  const std::string c = WriteRank(dir, "c.sbt", RankSpec{.pid = 4242, .rank = 2, .host = "h1"});
  auto merged = MergeTraces(std::vector{a, b, c}, dir / "m.sbt");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  ASSERT_EQ(merged->notes.size(), 2u);
  EXPECT_NE(merged->notes[0].find("pid 4242 of " + b + " (rank 1 on host h2) is also pid 4242 of " +
                                  a + " (rank 0 on host h1): written as pid 4194304"),
            std::string::npos)
      << merged->notes[0];
  EXPECT_NE(merged->notes[1].find("written as pid 4194305"), std::string::npos);
  EXPECT_EQ(merged->inputs[1].processes[0].out_pid, 4194304u);

  const Trace out = Read(dir / "m.sbt");
  std::multiset<std::string> expected;
  const uint32_t out_pids[] = {4242, 4194304, 4194305};
  int i = 0;
  for (const std::string& in : {a, b, c}) {
    const uint32_t pid = out_pids[i++];
    for (const std::string& row : Rows(Read(in), {{4242u, pid}, {0u, pid}})) expected.insert(row);
  }
  EXPECT_TRUE(Rows(out) == expected);
  std::set<uint32_t> pids;
  for (const Process& p : out.Rows<Process>()) pids.insert(p.pid);
  EXPECT_EQ(pids, (std::set<uint32_t>{4242, 4194304, 4194305}));
  EXPECT_EQ(MetadataValue(out, 4194304, kMergeOriginalPidKey), "4242");
  EXPECT_EQ(MetadataValue(out, 4194305, kMergeSourceKey), c);
  EXPECT_EQ(MetadataValue(out, 4242, kMergeOriginalPidKey), "<none>");
}

TEST(Merge, TheMergedRunIsAnalysedOnOneClock) {
  TempDir dir;
  // Rank 1's capture clock runs 5 s ahead of rank 0's; their anchors say so.
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 1, .rank = 0});
  const std::string b =
      WriteRank(dir, "b.sbt", RankSpec{.pid = 2, .rank = 1, .clock_offset_ns = 5'000'000'000});
  ASSERT_TRUE(MergeTraces(std::vector{a, b}, dir / "m.sbt").ok());
  analysis::CompactTrace t;
  ASSERT_TRUE(analysis::LoadCompactTrace(dir / "m.sbt", {}, &t, nullptr).ok());
  EXPECT_TRUE(t.stats().clocks_aligned);
  EXPECT_EQ(t.stats().processes_unaligned, 0u);
  // Aligned, the two ranks' work overlaps instead of lying 5 s apart.
  EXPECT_LT(t.window_end() - t.window_begin(), 1'000'000'000u);
}

TEST(Merge, ATruncatedInputGivesItsReadablePartAndTheDamage) {
  TempDir dir;
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 1, .rank = 0});
  const std::string b = WriteRank(dir, "b.sbt", RankSpec{.pid = 2, .rank = 1, .kernels = 2000});
  const uint64_t full = Read(b).EventCount();
  // Killed mid-write: cut in the middle of a chunk.
  ASSERT_EQ(::truncate(b.c_str(), static_cast<off_t>(FileSize(b).value() * 6 / 10 + 5)), 0);
  auto merged = MergeTraces(std::vector{a, b}, dir / "m.sbt");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_TRUE(merged->inputs[0].damage.clean());
  EXPECT_FALSE(merged->inputs[1].damage.clean());
  EXPECT_GT(merged->inputs[1].events, 0u);
  EXPECT_LT(merged->inputs[1].events, full);
  // What was readable is there, with its stacks.
  const Trace out = Read(dir / "m.sbt");
  std::multiset<std::string> expected = Rows(Read(a), {{0u, 1u}});
  for (const std::string& row : Rows(Read(b), {{0u, 2u}})) expected.insert(row);
  EXPECT_TRUE(Rows(out) == expected);
  // The damaged input's process says what it lost; the other's does not.
  std::map<std::string, std::set<uint32_t>> damage_rows;
  for (const MetadataEntry& m : out.Rows<MetadataEntry>())
    if (out.strings.Get(m.key_id) == kMergeInputDamageKey) {
      damage_rows["damage"].insert(m.pid);
      EXPECT_TRUE(out.strings.Get(m.value_id).starts_with(b + " is damaged ("));
    }
  for (const Stat& st : out.Rows<Stat>())
    if (out.strings.Get(st.name_id) == "merge.input_unreadable_bytes") {
      damage_rows["bytes"].insert(st.pid);
      EXPECT_EQ(uint64_t(st.value),
                merged->inputs[1].damage.file_size - merged->inputs[1].damage.valid_bytes);
      EXPECT_EQ(st.severity, 2);
    }
  EXPECT_EQ(damage_rows["damage"], std::set<uint32_t>{2u});
  EXPECT_EQ(damage_rows["bytes"], std::set<uint32_t>{2u});

  // --strict: an error naming the file, and no output.
  auto strict = MergeTraces(std::vector{a, b}, dir / "s.sbt", MergeOptions{.strict = true});
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(strict.status().message().find(b + " is damaged"), std::string::npos)
      << strict.status().message();
  EXPECT_FALSE(PathExists(dir / "s.sbt"));
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"a.sbt", "b.sbt", "m.sbt"}));
}

// An input read without its index (a killed capture's: the index lists no
// rows) keeps its chunks whole in the merged file: a batch is never split.
TEST(Merge, AnInputWithoutItsIndexKeepsItsChunksWhole) {
  TempDir dir;
  Trace t;
  t.strings.Intern("");
  const uint32_t name = t.strings.Intern("k");
  for (uint32_t i = 0; i < format::kMaxRowsPerChunk + 100; ++i) {
    KernelEvent k{};
    k.start_ns = 1000 + 10 * uint64_t(i);
    k.end_ns = k.start_ns + 5;
    k.pid = 7;
    k.name_id = name;
    k.correlation_id = i + 1;
    t.Rows<KernelEvent>().push_back(k);
  }
  const std::string in = dir / "a.sbt";
  format::SbtWriterOptions o;
  o.rows_per_chunk = format::kMaxRowsPerChunk;
  ASSERT_TRUE(format::WriteTraceFile(t, in, o).ok());
  // The trailer cut: the reader scans the chunks, their index entries without row counts.
  ASSERT_EQ(::truncate(in.c_str(), static_cast<off_t>(FileSize(in).value() - 8)), 0);
  auto merged = MergeTraces(std::vector{in}, dir / "m.sbt");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  auto reader = format::SbtReader::Open(dir / "m.sbt");
  ASSERT_TRUE(reader.ok());
  uint64_t largest = 0, rows = 0;
  for (const format::ChunkIndexEntry& c : (*reader)->chunks())
    if (c.table_kind == uint16_t(TableKind::kKernel)) {
      largest = std::max<uint64_t>(largest, c.rows);
      rows += c.rows;
    }
  EXPECT_EQ(rows, format::kMaxRowsPerChunk + 100u);
  EXPECT_EQ(largest, format::kMaxRowsPerChunk);
}

TEST(Merge, StackReferencesPastALostTableBecomeNone) {
  TempDir dir;
  const std::string a = dir / "a.sbt";
  Trace t = MakeRankTrace(RankSpec{.pid = 1, .rank = 0});
  // A call whose stack node is not in the file (its chunk was lost).
  t.Rows<ApiEvent>()[0].stack_id = 100000;
  ASSERT_TRUE(WriteStreamed(t, a).ok());
  auto merged = MergeTraces(std::vector{a}, dir / "m.sbt");
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->inputs[0].dangling_ids, 1u);
  ASSERT_EQ(merged->notes.size(), 1u);
  EXPECT_NE(merged->notes[0].find("1 stack or frame references"), std::string::npos);
  EXPECT_EQ(Read(dir / "m.sbt").Rows<ApiEvent>()[0].stack_id, 0u);
}

TEST(Merge, OutputRules) {
  TempDir dir;
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 1, .rank = 0});
  const std::string b = WriteRank(dir, "b.sbt", RankSpec{.pid = 2, .rank = 1});
  const std::string before = ReadFileToString(a).value();
  // Never onto an input, even with overwrite.
  auto onto = MergeTraces(std::vector{a, b}, a, MergeOptions{.overwrite = true});
  ASSERT_FALSE(onto.ok());
  EXPECT_NE(onto.status().message().find("input"), std::string::npos) << onto.status().message();
  EXPECT_EQ(ReadFileToString(a).value(), before);
  // An existing output only with overwrite.
  ASSERT_TRUE(WriteStringToFile(dir / "m.sbt", "old").ok());
  auto exists = MergeTraces(std::vector{a, b}, dir / "m.sbt");
  ASSERT_FALSE(exists.ok());
  EXPECT_NE(exists.status().message().find("file exists"), std::string::npos);
  EXPECT_EQ(ReadFileToString(dir / "m.sbt").value(), "old");
  EXPECT_TRUE(MergeTraces(std::vector{a, b}, dir / "m.sbt", MergeOptions{.overwrite = true}).ok());
  EXPECT_EQ(Read(dir / "m.sbt").Rows<Process>().size(), 2u);
  // Not a trace: an error before anything is written.
  ASSERT_TRUE(WriteStringToFile(dir / "x.sbt", "not a trace").ok());
  auto bad = MergeTraces(std::vector{a, dir / "x.sbt"}, dir / "n.sbt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.sbt"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(PathExists(dir / "n.sbt"));
  EXPECT_FALSE(MergeTraces(std::vector<std::string>{}, dir / "n.sbt").ok());
}

TEST(Merge, RefusesAMergeTogetherWithOneOfItsInputs) {
  TempDir dir;
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 1, .rank = 0});
  const std::string b = WriteRank(dir, "b.sbt", RankSpec{.pid = 2, .rank = 1});
  const std::string c = WriteRank(dir, "c.sbt", RankSpec{.pid = 3, .rank = 2});
  ASSERT_TRUE(MergeTraces(std::vector{a, b}, dir / "ab.sbt").ok());
  // A directory holding a run and its merge: a's and b's processes twice.
  auto twice = MergeTraces(std::vector{dir / "ab.sbt", a, c}, dir / "m.sbt");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(),
            dir / "ab.sbt" + " is a merge that holds " + a +
                ", which is an input too: its processes would be in the output twice; name the "
                "files to merge (or move " +
                dir / "ab.sbt" + " out of the directory)");
  // A merge with traces it does not hold is fine.
  auto more = MergeTraces(std::vector{dir / "ab.sbt", c}, dir / "m.sbt");
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  EXPECT_EQ(Read(dir / "m.sbt").Rows<Process>().size(), 3u);
}

TEST(Merge, SaysWhenAnInputWasRecordedAtAnotherTime) {
  TempDir dir;
  const uint64_t t0 = 1'700'000'000'000'000'000ull;
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 1, .rank = 0, .realtime_ns = t0});
  const std::string b =
      WriteRank(dir, "b.sbt", RankSpec{.pid = 2, .rank = 1, .realtime_ns = t0 + 1'000'000'000});
  const std::string old = WriteRank(
      dir, "old.sbt", RankSpec{.pid = 3, .rank = 2, .realtime_ns = t0 - 3 * 3600'000'000'000ull});
  auto merged = MergeTraces(std::vector{a, b, old}, dir / "m.sbt");
  ASSERT_TRUE(merged.ok());
  ASSERT_EQ(merged->notes.size(), 1u);
  EXPECT_NE(merged->notes[0].find(old + " was recorded 3.0 h before the other traces"),
            std::string::npos)
      << merged->notes[0];
}

TEST(Merge, ReplayPayloadsAreNotCarriedAndSaidSo) {
  TempDir dir;
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 1, .rank = 0});
  const std::string b = dir / "b.sbt";
  {
    auto w = format::SbtWriter::Open(b);
    ASSERT_TRUE(w.ok());
    const Trace t = MakeRankTrace(RankSpec{.pid = 2, .rank = 1});
    (*w)->AdoptStrings(t.strings);
    ForEachRecordType(
        [&]<typename T>() { (*w)->AppendRows(t.Rows<T>().data(), t.Rows<T>().size()); });
    const uint8_t payload[] = {1, 2, 3, 4};
    ASSERT_TRUE((*w)->WriteRawChunk(format::kFirstRawChunkType, payload).ok());
    ASSERT_TRUE((*w)->WriteRawChunk(format::kFirstRawChunkType + 1, payload).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto merged = MergeTraces(std::vector{a, b}, dir / "m.sbt");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->inputs[1].replay_chunks, 2u);
  ASSERT_EQ(merged->notes.size(), 1u);
  EXPECT_EQ(merged->notes[0], b +
                                  ": 2 replay payload chunks (profile --replay-capture) are not "
                                  "carried; replay works on one process's trace: replay " +
                                  b + " itself");
  auto reader = format::SbtReader::Open(dir / "m.sbt");
  ASSERT_TRUE(reader.ok());
  for (const format::ChunkIndexEntry& e : (*reader)->chunks())
    EXPECT_LT(e.type, format::kFirstRawChunkType);
}

TEST(Merge, ReportsProgress) {
  TempDir dir;
  const std::string a = WriteRank(dir, "a.sbt", RankSpec{.pid = 1, .rank = 0, .kernels = 500});
  const std::string b = WriteRank(dir, "b.sbt", RankSpec{.pid = 2, .rank = 1, .kernels = 500});
  std::vector<MergeProgress> seen;
  MergeOptions o;
  o.progress = [&](const MergeProgress& p) { seen.push_back(p); };
  auto merged = MergeTraces(std::vector{a, b}, dir / "m.sbt", o);
  ASSERT_TRUE(merged.ok());
  ASSERT_GT(seen.size(), 4u);
  EXPECT_EQ(seen.front().input, 0u);
  EXPECT_EQ(seen.back().input, 1u);
  EXPECT_EQ(seen.back().events, merged->events);
  EXPECT_EQ(seen.back().bytes_total, merged->input_bytes);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].bytes_done, seen[i - 1].bytes_done);
  EXPECT_LE(seen.back().bytes_done, seen.back().bytes_total);
}

}  // namespace
}  // namespace tracesmith::cluster
