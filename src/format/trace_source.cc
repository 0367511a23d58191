// The one-file and in-memory TraceSources (the run's is cluster/'s).
#include "tracesmith/format/trace_source.h"

#include <algorithm>

#include "tracesmith/format/sbt.h"

namespace tracesmith::format {
namespace {

using model::RecordTraits;

class FileCursor final : public TraceSource::Cursor {
 public:
  explicit FileCursor(SbtReader::EventCursor cursor) : cursor_(std::move(cursor)) {}
  StatusOr<bool> Next(model::TableKind* kind) override { return cursor_.Next(kind); }
  const model::Trace& batch() const override { return cursor_.batch(); }

 private:
  SbtReader::EventCursor cursor_;
};

class FileSource final : public TraceSource {
 public:
  // `reader` is `owned`'s, or the caller's (ReaderSource).
  FileSource(std::string path, std::unique_ptr<SbtReader> owned, SbtReader* reader)
      : path_(std::move(path)), owned_(std::move(owned)), reader_(reader) {}

  StatusOr<std::unique_ptr<Cursor>> Events(const SbtReader::EventKindFilter& wanted) override {
    return std::unique_ptr<Cursor>(new FileCursor(reader_->Events(wanted)));
  }
  std::vector<ChunkIndexEntry> TableChunks() const override {
    std::vector<ChunkIndexEntry> out;
    for (const ChunkIndexEntry& e : reader_->chunks())
      if (e.type == uint16_t(ChunkType::kTable)) out.push_back(e);
    return out;
  }
  std::string name() const override { return path_; }
  uint64_t bytes() const override { return reader_->report().file_size; }
  std::vector<std::string> files() const override {
    return path_.empty() ? std::vector<std::string>{} : std::vector<std::string>{path_};
  }
  ReadReport report() const override { return reader_->report(); }
  Status ReadAll(model::Trace* out) override {
    *out = model::Trace{};
    return reader_->ReadAll(out);
  }

 private:
  std::string path_;
  std::unique_ptr<SbtReader> owned_;
  SbtReader* reader_;
};

// The batches of an in-memory trace: every event kind's rows in slices of
// `per_batch`, kinds in model order; metadata and strings copied once per pass.
struct MemoryBatch {
  uint16_t kind = 0;
  size_t begin = 0, end = 0;
};

std::vector<MemoryBatch> BatchesOf(const model::Trace& trace, size_t per_batch,
                                   std::vector<ChunkIndexEntry>* index) {
  std::vector<MemoryBatch> out;
  model::ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) {
      const auto& rows = trace.Rows<T>();
      for (size_t b = 0; b < rows.size(); b += per_batch) {
        MemoryBatch m{uint16_t(RecordTraits<T>::kKind), b, std::min(rows.size(), b + per_batch)};
        ChunkIndexEntry e;
        e.type = uint16_t(ChunkType::kTable);
        e.table_kind = m.kind;
        e.rows = m.end - m.begin;
        e.min_ts = ~0ull;
        if (index) {  // the times only for an index (a pass needs the slices alone)
          for (size_t i = m.begin; i < m.end; ++i) {
            const uint64_t ts = model::LoadField(&rows[i], RecordTraits<T>::kAllFields[0]);
            e.min_ts = std::min(e.min_ts, ts);
            e.max_ts = std::max(e.max_ts, ts);
          }
          index->push_back(e);
        }
        out.push_back(m);
      }
    }
  });
  return out;
}

class MemoryCursor final : public TraceSource::Cursor {
 public:
  MemoryCursor(const model::Trace& trace, size_t per_batch,
               const SbtReader::EventKindFilter& wanted)
      : trace_(trace), batches_(BatchesOf(trace, per_batch, nullptr)) {
    batch_.strings = trace.strings;
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (!RecordTraits<T>::kIsEvent) batch_.Rows<T>() = trace.Rows<T>();
    });
    if (wanted)
      std::erase_if(batches_, [&](const MemoryBatch& b) {
        return !wanted(static_cast<model::TableKind>(b.kind));
      });
  }

  StatusOr<bool> Next(model::TableKind* kind) override {
    Clear();
    if (next_ == batches_.size()) return false;
    const MemoryBatch& b = batches_[next_++];
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (RecordTraits<T>::kIsEvent) {
        if (uint16_t(RecordTraits<T>::kKind) != b.kind) return;
        const auto& rows = trace_.Rows<T>();
        batch_.Rows<T>().assign(rows.begin() + b.begin, rows.begin() + b.end);
        *kind = RecordTraits<T>::kKind;
      }
    });
    last_ = b.kind;
    return true;
  }
  const model::Trace& batch() const override { return batch_; }

 private:
  void Clear() {
    if (!last_) return;
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (RecordTraits<T>::kIsEvent)
        if (uint16_t(RecordTraits<T>::kKind) == last_) batch_.Rows<T>().clear();
    });
    last_ = 0;
  }

  const model::Trace& trace_;
  std::vector<MemoryBatch> batches_;
  model::Trace batch_;
  size_t next_ = 0;
  uint16_t last_ = 0;
};

class InMemorySource final : public TraceSource {
 public:
  InMemorySource(const model::Trace& trace, size_t per_batch)
      : trace_(trace), per_batch_(std::max<size_t>(1, per_batch)) {}

  StatusOr<std::unique_ptr<Cursor>> Events(const SbtReader::EventKindFilter& wanted) override {
    return std::unique_ptr<Cursor>(new MemoryCursor(trace_, per_batch_, wanted));
  }
  std::vector<ChunkIndexEntry> TableChunks() const override {
    std::vector<ChunkIndexEntry> index;
    BatchesOf(trace_, per_batch_, &index);
    return index;
  }
  std::string name() const override { return std::string(); }
  uint64_t bytes() const override { return 0; }
  std::vector<std::string> files() const override { return {}; }
  ReadReport report() const override { return ReadReport{}; }

 private:
  const model::Trace& trace_;
  size_t per_batch_;
};

}  // namespace

Status TraceSource::Stream(const SbtReader::EventChunkCallback& on_events,
                           const SbtReader::EndCallback& on_end,
                           const SbtReader::EventKindFilter& wanted) {
  ASSIGN_OR_RETURN(std::unique_ptr<Cursor> cursor, Events(wanted));
  model::TableKind kind;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, cursor->Next(&kind));
    if (!more) break;
    RETURN_IF_ERROR(on_events(cursor->batch(), kind));
  }
  return on_end ? on_end(cursor->batch()) : OkStatus();
}

Status TraceSource::ReadAll(model::Trace* out) {
  *out = model::Trace{};
  // Reserved once from the index, as SbtReader::ReadAll does (its budget).
  ReserveFromIndex(TableChunks(), DecodeLimitFor(bytes()), out);
  return Stream(
      [&](const model::Trace& batch, model::TableKind kind) {
        model::ForEachRecordType([&]<typename T>() {
          if constexpr (RecordTraits<T>::kIsEvent)
            if (RecordTraits<T>::kKind == kind)
              out->Rows<T>().insert(out->Rows<T>().end(), batch.Rows<T>().begin(),
                                    batch.Rows<T>().end());
        });
        return OkStatus();
      },
      [&](const model::Trace& batch) {
        out->strings = batch.strings;
        model::ForEachRecordType([&]<typename T>() {
          if constexpr (!RecordTraits<T>::kIsEvent) out->Rows<T>() = batch.Rows<T>();
        });
        return OkStatus();
      });
}

StatusOr<std::unique_ptr<TraceSource>> OpenFileSource(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<SbtReader> reader, SbtReader::Open(path));
  SbtReader* r = reader.get();
  return std::unique_ptr<TraceSource>(new FileSource(path, std::move(reader), r));
}

std::unique_ptr<TraceSource> ReaderSource(SbtReader& reader, std::string path) {
  return std::make_unique<FileSource>(std::move(path), nullptr, &reader);
}

std::unique_ptr<TraceSource> MemorySource(const model::Trace& trace, size_t rows_per_batch) {
  return std::make_unique<InMemorySource>(trace, rows_per_batch);
}

}  // namespace tracesmith::format
