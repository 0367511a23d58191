// SbtWriter: streams a trace to an SBT file, chunk by chunk, in bounded memory.
//
// Rows are buffered per record kind and written as a table chunk when a
// kind's buffer reaches rows_per_chunk, or on Flush(). Strings and stack
// tables are always written before the event chunks that may reference
// them, so every prefix of the file that ends on a chunk boundary is a
// self-consistent trace. Close() appends the footer index and trailer.
//
// Not thread-safe: capture gives one writer to one background thread.
// Errors are sticky: after the first failed write every call is a no-op and
// status()/Flush()/Close() return that error.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/bytes.h"
#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::format {

namespace internal {
struct CodecScratch;
}

struct SbtWriterOptions {
  // zstd level per chunk; 0 stores chunks raw. 3: ~2-3x smaller at >300 MB/s.
  int zstd_level = 3;
  uint32_t rows_per_chunk = kDefaultRowsPerChunk;
  // fdatasync after every chunk: survives a machine crash, not just a process kill.
  bool sync_each_chunk = false;
  // Overwrite an existing file (otherwise Open fails with a clear message).
  bool overwrite = true;
  // Write under a temporary name beside the path and rename over it in
  // Close() only when every write succeeded (base/atomic_file.h): for whole
  // rewrites (import, symbolize), where a failure must leave the old file and
  // no partial one. Capture leaves it off: a killed program's chunks must be
  // under the real name, where the reader recovers them.
  bool replace_atomically = false;
};

// What the footer index records about one chunk.
struct ChunkIndexEntry {
  uint64_t offset = 0;
  uint16_t type = 0;
  uint16_t table_kind = 0;  // for table chunks
  uint64_t rows = 0;
  uint64_t min_ts = 0, max_ts = 0;  // event tables; 0 when unknown
};

struct SbtWriterStats {
  uint64_t chunks = 0;
  uint64_t bytes = 0;      // bytes written to the file so far
  uint64_t raw_bytes = 0;  // chunk payload bytes before compression
  uint64_t rows = 0;
};

class SbtWriter {
 public:
  static StatusOr<std::unique_ptr<SbtWriter>> Open(const std::string& path,
                                                   SbtWriterOptions options = {});
  ~SbtWriter();
  SbtWriter(const SbtWriter&) = delete;
  SbtWriter& operator=(const SbtWriter&) = delete;

  // Id of a string in this file's string table.
  uint32_t InternString(std::string_view s) { return strings_.Intern(s); }
  // Uses `table` (ids unchanged) as this file's string table. Call before
  // anything is written; used to rewrite an existing trace.
  void AdoptStrings(const model::StringTable& table) { strings_ = table; }

  // A capture's provisional stack ids (model::kProvisionalStackId and up)
  // are turned into final ones by `resolve` as rows are appended; it may
  // append the stack's Frame and StackNode rows first. Without one, rows are
  // written as they come (a trace rewritten keeps its values).
  using StackIdResolver = uint32_t (*)(void* context, uint32_t provisional_id);
  void SetStackIdResolver(StackIdResolver resolve, void* context) {
    resolve_stack_ = resolve;
    resolve_context_ = context;
  }

  template <typename T>
  void Append(const T& row) {
    if constexpr (requires { row.stack_id; }) {
      if (row.stack_id >= model::kProvisionalStackId && resolve_stack_) [[unlikely]] {
        T fixed = row;
        fixed.stack_id = ResolveStack(row.stack_id);
        AppendResolved(fixed);
        return;
      }
    }
    AppendResolved(row);
  }

  // Appends many rows without copying them into the buffer (whole chunks
  // are encoded straight from `rows`; a remainder is buffered).
  template <typename T>
  void AppendRows(const T* rows, size_t n) {
    if constexpr (requires { rows->stack_id; }) {
      for (size_t i = 0; i < n && resolve_stack_; ++i)
        if (rows[i].stack_id >= model::kProvisionalStackId) [[unlikely]] {
          for (size_t j = 0; j < n; ++j) Append(rows[j]);  // (rare: copied one by one)
          return;
        }
    }
    auto& pending = pending_.Rows<T>();
    while (n > 0 && !pending.empty()) {  // keep row order: top up the buffer first
      Append(*rows++);
      --n;
    }
    while (n >= options_.rows_per_chunk) {
      WriteRows(rows, options_.rows_per_chunk);
      rows += options_.rows_per_chunk;
      n -= options_.rows_per_chunk;
    }
    pending.insert(pending.end(), rows, rows + n);
  }

  // Appends one chunk of a type in the range reserved for replay payloads
  // (kFirstRawChunkType..kLastRawChunkType) holding `payload` as is (zstd-
  // compressed like every chunk when that makes it smaller). Buffered rows
  // are not flushed first: raw chunks reference no strings or metadata.
  // InvalidArgument for another type or a payload over kMaxChunkRawBytes.
  Status WriteRawChunk(uint16_t type, std::span<const uint8_t> payload);

  // Writes everything buffered (strings, metadata, events) as chunks.
  Status Flush();
  // Flush + footer index + trailer; closes the file. Idempotent.
  Status Close();
  const Status& status() const { return status_; }
  const SbtWriterStats& stats() const { return stats_; }
  const std::string& path() const { return path_; }

 private:
  SbtWriter(int fd, std::string path, SbtWriterOptions options,
            std::unique_ptr<AtomicFile> file = nullptr);
  template <typename T>
  void AppendResolved(const T& row) {
    auto& rows = pending_.Rows<T>();
    rows.push_back(row);
    if (rows.size() >= options_.rows_per_chunk) WriteTable<T>();
  }
  uint32_t ResolveStack(uint32_t id) { return resolve_stack_(resolve_context_, id); }
  template <typename T>
  void WriteTable();
  template <typename T>
  void WriteRows(const T* rows, size_t n);
  void WriteStrings();
  void WriteDependencies();  // strings + metadata before events
  void WriteChunk(ChunkType type, const ByteWriter& payload, const ChunkIndexEntry& entry);
  void WriteBytes(const void* data, size_t n);

  int fd_;
  std::unique_ptr<AtomicFile> file_;  // with replace_atomically
  std::string path_;
  SbtWriterOptions options_;
  Status status_;
  bool closed_ = false;
  model::StringTable strings_;
  uint32_t strings_flushed_ = 1;  // id 0 is implicit
  model::Trace pending_;
  ByteWriter payload_;
  std::vector<uint8_t> compressed_;
  std::unique_ptr<internal::CodecScratch> scratch_;
  std::vector<ChunkIndexEntry> index_;
  SbtWriterStats stats_;
  StackIdResolver resolve_stack_ = nullptr;
  void* resolve_context_ = nullptr;
};

// Writes a whole in-memory trace (atomically: see replace_atomically, which
// it always sets).
Status WriteTraceFile(const model::Trace& trace, const std::string& path,
                      SbtWriterOptions options = {});

}  // namespace tracesmith::format
