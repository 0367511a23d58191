// MergeTraces: the batches of the run read on the fly (RunSource) written
// to one file, one chunk per batch.
#include "tracesmith/cluster/merge.h"

#include <algorithm>
#include <array>
#include <set>

#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/cluster/run_source.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::cluster {
namespace {

using model::RecordTraits;

// Writes what a batch holds that the file does not yet: new strings (in id
// order, so the file's ids are the batch's), new metadata rows, and the
// batch's event rows when it has some.
class BatchWriter {
 public:
  explicit BatchWriter(format::SbtWriter* writer) : writer_(writer) {}

  void WriteNew(const model::Trace& batch) {
    for (; strings_ < batch.strings.size(); ++strings_)
      writer_->InternString(batch.strings.Get(strings_));
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (!RecordTraits<T>::kIsEvent) {
        const auto& rows = batch.Rows<T>();
        size_t& done = done_[size_t(RecordTraits<T>::kKind) - model::kFirstMetadataTableKind];
        for (; done < rows.size(); ++done) writer_->Append(rows[done]);
      }
    });
  }

  // The batch's rows as one chunk (the writer's rows_per_chunk holds the
  // largest): the file's chunks are the run's batches, in the run's order,
  // so a reader of the file gets what a reader of the run gets, batch for
  // batch (and the export's time-ordering window behaves alike on both; a
  // capture's small periodic chunks stay small: packing them changes what
  // that window sees).
  Status WriteEvents(const model::Trace& batch, model::TableKind kind) {
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (RecordTraits<T>::kIsEvent)
        if (RecordTraits<T>::kKind == kind)
          writer_->AppendRows(batch.Rows<T>().data(), batch.Rows<T>().size());
    });
    return writer_->Flush();
  }

 private:
  format::SbtWriter* writer_;
  uint32_t strings_ = 1;  // id 0, "", is every table's
  std::array<size_t, size_t{model::kMaxTableKind} - model::kFirstMetadataTableKind + 1> done_{};
};

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
  // The survey first: a non-trace or (with strict) a damaged input stops the
  // merge before the output is looked at.
  ASSIGN_OR_RETURN(std::unique_ptr<RunSource> source, RunSource::Open(inputs, options));
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
  // A batch is never split (an input read without its index lists no rows).
  wo.rows_per_chunk = format::kMaxRowsPerChunk;
  ASSIGN_OR_RETURN(auto writer, format::SbtWriter::Open(write_path, wo));
  BatchWriter out(writer.get());
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource::Cursor> cursor, source->Events());
  model::TableKind kind;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, cursor->Next(&kind));
    out.WriteNew(cursor->batch());
    if (more) RETURN_IF_ERROR(out.WriteEvents(cursor->batch(), kind));
    RETURN_IF_ERROR(writer->status());
    if (!more) break;
  }
  RETURN_IF_ERROR(writer->Close());
  MergeResult result = source->result();
  result.output_bytes = writer->stats().bytes;
  if (atomic) RETURN_IF_ERROR(atomic->Commit());
  return result;
}

}  // namespace tracesmith::cluster
