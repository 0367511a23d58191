// The survey of a run's inputs (run_survey.h).
#include "run_survey.h"

#include <sys/stat.h>

#include <algorithm>

#include "tracesmith/format/sbt.h"
#include "tracesmith/model/process_rank.h"

namespace tracesmith::cluster::internal {
namespace {

using model::RecordTraits;

// Inputs recorded further apart than this (by their clock anchors) are
// probably not one job: an earlier run's file left in the directory.
constexpr uint64_t kApartNs = 60'000'000'000ull;  // 60 s

std::string Ago(uint64_t ns) {
  const double s = ns / 1e9;
  if (s < 120) return StrFormat("%.0f s", s);
  if (s < 7200) return StrFormat("%.0f min", s / 60);
  if (s < 172800) return StrFormat("%.1f h", s / 3600);
  return StrFormat("%.0f days", s / 86400);
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return a == b;
}

}  // namespace

StatusOr<Survey> SurveyInput(const std::string& path, bool strict) {
  ASSIGN_OR_RETURN(auto reader, format::SbtReader::Open(path));
  Survey s;
  for (const format::ChunkIndexEntry& e : reader->chunks()) {
    if (e.type >= format::kFirstRawChunkType && e.type <= format::kLastRawChunkType)
      ++s.replay_chunks;
    if (e.type == uint16_t(format::ChunkType::kTable)) s.table_chunks.push_back(e);
  }
  auto survey = [&](const model::Trace& meta) {
    for (const model::Process& p : meta.Rows<model::Process>()) {
      MergedProcess m;
      m.pid = p.pid;
      m.rank = model::KnownRank(p).value_or(-1);
      m.host = meta.strings.Get(p.hostname_id);
      m.name = meta.strings.Get(p.name_id);
      s.processes.push_back(std::move(m));
    }
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (!RecordTraits<T>::kIsEvent && requires(T t) { t.pid; })
        for (const T& row : meta.Rows<T>())
          if (row.pid != 0 || !kFileLevel<T>) s.pids.insert(row.pid);
    });
    for (const model::MetadataEntry& m : meta.Rows<model::MetadataEntry>())
      if (meta.strings.Get(m.key_id) == kMergeSourceKey)
        s.sources.emplace_back(meta.strings.Get(m.value_id));
    for (const model::ClockAnchor& a : meta.Rows<model::ClockAnchor>()) {
      if (a.realtime_ns == 0) continue;
      if (s.realtime_begin == 0 || a.realtime_ns < s.realtime_begin)
        s.realtime_begin = a.realtime_ns;
      s.realtime_end = std::max(s.realtime_end, a.realtime_ns);
    }
    return OkStatus();
  };
  // Event chunks are checked (header and checksum) but not decoded.
  Status st = reader->Stream([](const model::Trace&, model::TableKind) { return OkStatus(); },
                             survey, [](model::TableKind) { return false; });
  if (!st.ok()) return Status(st.code(), path + ": " + st.message());
  if (strict) RETURN_IF_ERROR(reader->report().DamageStatus(path));
  s.report = reader->report();
  return s;
}

Status CheckNoMergeOfAnInput(std::span<const std::string> inputs,
                             const std::vector<Survey>& surveys) {
  for (size_t i = 0; i < inputs.size(); ++i)
    for (const std::string& source : surveys[i].sources)
      for (size_t j = 0; j < inputs.size(); ++j)
        if (j != i && SameFile(source, inputs[j]))
          return InvalidArgument(StrFormat(
              "%s is a merge that holds %s, which is an input too: its processes would be in "
              "the output twice; name the files to merge (or move %s out of the directory)",
              inputs[i].c_str(), inputs[j].c_str(), inputs[i].c_str()));
  return OkStatus();
}

void NoteInputsApart(MergeResult* r) {
  const auto& in = r->inputs;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].realtime_begin == 0) continue;
    uint64_t nearest = UINT64_MAX;
    bool before = false, others = false;
    for (size_t j = 0; j < in.size(); ++j) {
      if (j == i || in[j].realtime_begin == 0) continue;
      others = true;
      uint64_t gap = 0;
      if (in[i].realtime_end < in[j].realtime_begin)
        gap = in[j].realtime_begin - in[i].realtime_end;
      else if (in[j].realtime_end < in[i].realtime_begin)
        gap = in[i].realtime_begin - in[j].realtime_end;
      if (gap < nearest) {
        nearest = gap;
        before = in[i].realtime_end < in[j].realtime_begin;
      }
    }
    if (others && nearest > kApartNs)
      r->notes.push_back(StrFormat(
          "%s was recorded %s %s the other traces (by its clock anchors): a file from another "
          "run? Name the files to merge to leave it out",
          in[i].path.c_str(), Ago(nearest).c_str(), before ? "before" : "after"));
  }
}

}  // namespace tracesmith::cluster::internal
