// MergeTraces: a survey of every input (its processes, pids and clock
// anchors: metadata only), then each input streamed into the output with its
// ids translated (input_remap.h).
#include "tracesmith/cluster/merge.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <set>

#include "input_remap.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/process_rank.h"

namespace tracesmith::cluster {
namespace {

using internal::InputRemap;
using internal::OutputTables;
using model::RecordTraits;

// Inputs recorded further apart than this (by their clock anchors) are
// probably not one job: an earlier run's file left in the directory.
constexpr uint64_t kApartNs = 60'000'000'000ull;  // 60 s

// Stat and MetadataEntry rows with pid 0 are about the file (an importer's
// counts), not about a process 0.
template <typename T>
constexpr bool kFileLevel =
    std::is_same_v<T, model::Stat> || std::is_same_v<T, model::MetadataEntry>;

// What the survey (metadata only) finds in one input.
struct Survey {
  std::vector<MergedProcess> processes;
  std::set<uint32_t> pids;  // named by any metadata row
  uint64_t realtime_begin = 0, realtime_end = 0;
  uint64_t replay_chunks = 0;
  std::vector<std::string> sources;  // kMergeSourceKey values: it is a merge of these
};

StatusOr<Survey> SurveyInput(const std::string& path, bool strict) {
  ASSIGN_OR_RETURN(auto reader, format::SbtReader::Open(path));
  Survey s;
  for (const format::ChunkIndexEntry& e : reader->chunks())
    if (e.type >= format::kFirstRawChunkType && e.type <= format::kLastRawChunkType)
      ++s.replay_chunks;
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
  return s;
}

// "rank 1 on host h2", "pid 42 on host h1": who a process is, for notes.
std::string Who(const MergedInput& in, uint32_t pid) {
  for (const MergedProcess& p : in.processes) {
    if (p.pid != pid) continue;
    std::string s = p.rank >= 0 ? StrFormat("rank %d", p.rank) : std::string();
    if (!p.host.empty()) s += (s.empty() ? "on host " : " on host ") + p.host;
    return s;
  }
  return std::string();
}

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

// An input that is itself a merge of another input would put that input's
// processes in the output twice (a directory holding a run and its merge).
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

// Inputs whose anchors put them far from every other input's span.
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

// Copies the metadata rows of `batch` not written yet (the reader's batch
// only grows), translated. Kinds in model order: mappings before the frames
// that point into them, frames before stack nodes.
class MetadataCopier {
 public:
  MetadataCopier(InputRemap* remap, format::SbtWriter* writer, std::optional<uint32_t> sole_pid)
      : remap_(remap), writer_(writer), sole_pid_(sole_pid) {}

  void CopyNew(const model::Trace& batch) {
    remap_->SetSource(&batch);
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (!RecordTraits<T>::kIsEvent) {
        const auto& rows = batch.Rows<T>();
        size_t& done = done_[size_t(RecordTraits<T>::kKind) - model::kFirstMetadataTableKind];
        for (; done < rows.size(); ++done) {
          T row = rows[done];
          if constexpr (kFileLevel<T>) {
            // A file-level stat or entry goes to the input's process when it
            // has one; otherwise it stays about no process.
            if (row.pid == 0 && !sole_pid_) {
              remap_->Apply(&row);
              row.pid = 0;
              writer_->Append(row);
              continue;
            }
            if (row.pid == 0) row.pid = *sole_pid_;
          }
          remap_->Apply(&row);
          writer_->Append(row);
          if constexpr (std::is_same_v<T, model::Frame>) remap_->FramesWritten(1);
          if constexpr (std::is_same_v<T, model::StackNode>) remap_->NodesWritten(1);
        }
      }
    });
  }

 private:
  InputRemap* remap_;
  format::SbtWriter* writer_;
  std::optional<uint32_t> sole_pid_;
  std::array<size_t, size_t{model::kMaxTableKind} - model::kFirstMetadataTableKind + 1> done_{};
};

struct Counters {
  uint64_t bytes_before = 0;  // input bytes of the inputs already merged
  uint64_t bytes_total = 0;
  uint64_t events = 0;
};

// Streams input `index` into `writer`.
Status MergeOne(size_t index, const Survey& survey, const MergeOptions& options,
                OutputTables* tables, format::SbtWriter* writer, Counters* counters,
                MergeResult* result) {
  MergedInput* in = &result->inputs[index];
  const size_t count = result->inputs.size();
  ASSIGN_OR_RETURN(auto reader, format::SbtReader::Open(in->path));
  InputRemap remap(tables, writer, index);
  // The pids the survey found are decided first (in pid order); any other
  // pid when an event names it.
  for (uint32_t pid : survey.pids) remap.Pid(pid);
  std::optional<uint32_t> sole;
  std::set<uint32_t> process_pids;
  for (const MergedProcess& p : in->processes) process_pids.insert(p.pid);
  if (process_pids.size() == 1) sole = *process_pids.begin();
  if (process_pids.empty() && survey.pids.size() == 1) sole = *survey.pids.begin();
  MetadataCopier meta(&remap, writer, sole);
  model::Trace scratch;
  Status st = reader->Stream(
      [&](const model::Trace& batch, model::TableKind kind) {
        meta.CopyNew(batch);
        model::ForEachRecordType([&]<typename T>() {
          if constexpr (RecordTraits<T>::kIsEvent) {
            if (RecordTraits<T>::kKind != kind) return;
            auto& rows = scratch.Rows<T>();
            rows.assign(batch.Rows<T>().begin(), batch.Rows<T>().end());
            for (T& row : rows) remap.Apply(&row);
            writer->AppendRows(rows.data(), rows.size());
            in->events += rows.size();
            in->events_by_kind[RecordTraits<T>::kLabel] += rows.size();
            counters->events += rows.size();
            rows.clear();
          }
        });
        if (options.strict) RETURN_IF_ERROR(reader->report().DamageStatus(in->path));
        if (options.progress)
          options.progress(MergeProgress{index, count,
                                         counters->bytes_before + reader->report().valid_bytes,
                                         counters->bytes_total, counters->events});
        return writer->status();
      },
      [&](const model::Trace& batch) {
        meta.CopyNew(batch);  // what follows the last events: end anchors, final stats
        return writer->status();
      });
  if (!st.ok()) {
    if (st.code() == StatusCode::kDataLoss || st.code() == StatusCode::kIoError) return st;
    return Status(st.code(), in->path + ": " + st.message());
  }
  if (options.strict) RETURN_IF_ERROR(reader->report().DamageStatus(in->path));
  remap.Finish();
  in->damage = reader->report();
  in->dangling_ids = remap.dangling();
  in->flows_left_out = remap.flow_overflow();

  // Which input each process came from, and its pid before the merge.
  const uint32_t source_key = writer->InternString(kMergeSourceKey);
  const uint32_t source_value = writer->InternString(in->path);
  for (const auto& [pid, out_pid] : remap.pids())
    writer->Append(
        model::MetadataEntry{.key_id = source_key, .value_id = source_value, .pid = out_pid});
  if (!in->damage.clean()) {
    const uint32_t damage_key = writer->InternString(kMergeInputDamageKey);
    const uint32_t damage_value = writer->InternString(in->damage.DamageStatus(in->path).message());
    const uint32_t unreadable = writer->InternString("merge.input_unreadable_bytes");
    const uint32_t lost = writer->InternString("merge.input_events_lost");
    constexpr uint8_t kDataLoss = 2;
    for (const auto& [pid, out_pid] : remap.pids()) {
      writer->Append(
          model::MetadataEntry{.key_id = damage_key, .value_id = damage_value, .pid = out_pid});
      writer->Append(
          model::Stat{.value = int64_t(in->damage.file_size -
                                       std::min(in->damage.valid_bytes, in->damage.file_size)),
                      .name_id = unreadable,
                      .pid = out_pid,
                      .severity = kDataLoss});
      if (in->damage.events_lost)
        writer->Append(model::Stat{.value = int64_t(in->damage.events_lost),
                                   .name_id = lost,
                                   .pid = out_pid,
                                   .severity = kDataLoss});
    }
  }
  for (const InputRemap::Renumbered& r : remap.renumbered()) {
    writer->Append(model::MetadataEntry{.key_id = writer->InternString(kMergeOriginalPidKey),
                                        .value_id = writer->InternString(std::to_string(r.pid)),
                                        .pid = r.out_pid});
    const MergedInput& first = result->inputs[r.first_input];
    const std::string who = Who(*in, r.pid), first_who = Who(first, r.pid);
    result->notes.push_back(
        StrFormat("pid %u of %s%s is also pid %u of %s%s: written as pid %u (the original is kept "
                  "in its metadata as %s)",
                  r.pid, in->path.c_str(), who.empty() ? "" : (" (" + who + ")").c_str(), r.pid,
                  first.path.c_str(), first_who.empty() ? "" : (" (" + first_who + ")").c_str(),
                  r.out_pid, kMergeOriginalPidKey));
  }
  // Processes seen only in events (no Process row): listed all the same.
  for (const auto& [pid, out_pid] : remap.pids()) {
    if (std::none_of(in->processes.begin(), in->processes.end(),
                     [&](const MergedProcess& p) { return p.pid == pid; }))
      in->processes.push_back(MergedProcess{.pid = pid, .out_pid = out_pid});
  }
  for (MergedProcess& p : in->processes)
    if (auto it = remap.pids().find(p.pid); it != remap.pids().end()) p.out_pid = it->second;
  counters->bytes_before += in->bytes;
  return writer->status();
}

// "0-3,5,7-8"
std::string Ranges(const std::set<int32_t>& values) {
  std::string out;
  for (auto it = values.begin(); it != values.end();) {
    int32_t first = *it, last = first;
    for (++it; it != values.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ",";
    out += first == last ? std::to_string(first) : StrFormat("%d-%d", first, last);
  }
  return out;
}

std::string HumanCount(uint64_t n) {
  if (n < 10'000) return std::to_string(n);
  if (n < 1'000'000) return StrFormat("%.1f k", n / 1e3);
  if (n < 1'000'000'000) return StrFormat("%.1f M", n / 1e6);
  return StrFormat("%.1f G", n / 1e9);
}

}  // namespace

std::string MergeResult::Describe() const {
  std::set<int32_t> ranks;
  std::set<std::string> hosts;
  std::vector<uint32_t> rankless;
  for (const MergedInput& in : inputs)
    for (const MergedProcess& p : in.processes) {
      if (p.rank >= 0)
        ranks.insert(p.rank);
      else
        rankless.push_back(p.out_pid);
      if (!p.host.empty()) hosts.insert(p.host);
    }
  std::vector<std::string> who;
  if (!ranks.empty()) who.push_back((ranks.size() == 1 ? "rank " : "ranks ") + Ranges(ranks));
  if (rankless.size() == 1) {
    who.push_back(StrFormat("pid %u", rankless[0]));
  } else if (rankless.size() <= 4 && !rankless.empty()) {
    std::string pids = "pids ";
    for (size_t i = 0; i < rankless.size(); ++i)
      pids += (i ? ", " : "") + std::to_string(rankless[i]);
    who.push_back(pids);
  } else if (!rankless.empty()) {
    who.push_back(StrFormat("%zu processes without a rank", rankless.size()));
  }
  std::string text = StrFormat("%zu trace%s", inputs.size(), inputs.size() == 1 ? "" : "s");
  if (!who.empty() || !hosts.empty()) {
    text += " (";
    for (size_t i = 0; i < who.size(); ++i) text += (i ? ", " : "") + who[i];
    if (!hosts.empty()) {
      text += who.empty() ? "" : " ";
      if (hosts.size() == 1) {
        text += "on host " + *hosts.begin();
      } else if (hosts.size() <= 3) {
        text += "on hosts ";
        for (auto it = hosts.begin(); it != hosts.end(); ++it)
          text += (it == hosts.begin() ? "" : ", ") + *it;
      } else {
        text += StrFormat("on %zu hosts", hosts.size());
      }
    }
    text += ")";
  }
  return text + ", " + HumanCount(events) + (events == 1 ? " event" : " events");
}

StatusOr<MergeResult> MergeTraces(std::span<const std::string> inputs, const std::string& output,
                                  const MergeOptions& options) {
  if (inputs.empty()) return InvalidArgument("no trace to merge");
  MergeResult result;
  // The survey: every input's processes before anything is written, so a
  // non-trace or (with strict) a damaged input stops the merge at once.
  std::vector<Survey> surveys;
  OutputTables tables;
  Counters counters;
  for (const std::string& path : inputs) {
    ASSIGN_OR_RETURN(Survey s, SurveyInput(path, options.strict));
    MergedInput in;
    in.path = path;
    auto size = FileSize(path);
    in.bytes = size.ok() ? *size : 0;
    in.processes = s.processes;
    for (MergedProcess& p : in.processes) p.out_pid = p.pid;
    in.replay_chunks = s.replay_chunks;
    in.realtime_begin = s.realtime_begin;
    in.realtime_end = s.realtime_end;
    tables.known_pids.insert(s.pids.begin(), s.pids.end());
    counters.bytes_total += in.bytes;
    result.inputs.push_back(std::move(in));
    surveys.push_back(std::move(s));
  }
  RETURN_IF_ERROR(CheckNoMergeOfAnInput(inputs, surveys));
  NoteInputsApart(&result);

  std::unique_ptr<AtomicFile> atomic;
  std::string write_path = output;
  if (!options.in_place) {
    RETURN_IF_ERROR(CheckOutputFile(output, inputs, options.overwrite));
    ASSIGN_OR_RETURN(atomic, AtomicFile::Create(output, inputs));
    RETURN_IF_ERROR(atomic->CloseFd());
    write_path = atomic->temp_path();
  }
  format::SbtWriterOptions wo;
  wo.overwrite = true;
  ASSIGN_OR_RETURN(auto writer, format::SbtWriter::Open(write_path, wo));
  for (size_t i = 0; i < inputs.size(); ++i) {
    MergedInput& in = result.inputs[i];
    RETURN_IF_ERROR(MergeOne(i, surveys[i], options, &tables, writer.get(), &counters, &result));
    if (in.replay_chunks)
      result.notes.push_back(
          StrFormat("%s: %" PRIu64
                    " replay payload chunks (profile --replay-capture) are not carried; "
                    "replay works on one process's trace: replay %s itself",
                    in.path.c_str(), in.replay_chunks, in.path.c_str()));
    // The reader counts replay payload chunks among the chunks it skips.
    if (in.damage.chunks_skipped_unknown > in.replay_chunks)
      result.notes.push_back(
          StrFormat("%s: %" PRIu64 " chunks of a newer TraceSmith version are not carried",
                    in.path.c_str(), in.damage.chunks_skipped_unknown - in.replay_chunks));
    if (in.flows_left_out)
      result.notes.push_back(
          StrFormat("%s: %" PRIu64
                    " flows (launch -> GPU arrows) left out: their ids, numbered after the earlier "
                    "inputs' flows, do not fit 32 bits (an imported trace may number flows by "
                    "correlation id); its events are all there",
                    in.path.c_str(), in.flows_left_out));
    if (in.dangling_ids)
      result.notes.push_back(
          StrFormat("%s: %" PRIu64 " stack or frame references pointed past what the file holds "
                    "(a damaged input): written as none",
                    in.path.c_str(), in.dangling_ids));
    result.events += in.events;
    result.input_bytes += in.bytes;
  }
  RETURN_IF_ERROR(writer->Close());
  result.output_bytes = writer->stats().bytes;
  if (atomic) RETURN_IF_ERROR(atomic->Commit());
  return result;
}

}  // namespace tracesmith::cluster
