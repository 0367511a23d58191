#include "tracesmith/format/sbt_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "table_codec.h"
#include "tracesmith/base/crc32c.h"

namespace tracesmith::format {

using model::RecordTraits;

StatusOr<std::unique_ptr<SbtWriter>> SbtWriter::Open(const std::string& path,
                                                     SbtWriterOptions options) {
  std::unique_ptr<AtomicFile> file;
  int fd = -1;
  if (options.replace_atomically) {
    if (!options.overwrite && ::access(path.c_str(), F_OK) == 0)
      return IoError(path + ": file exists (use --force to overwrite)");
    ASSIGN_OR_RETURN(file, AtomicFile::Create(path));
    fd = file->fd();
  } else {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (options.overwrite ? O_TRUNC : O_EXCL);
    fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) {
      if (errno == EEXIST) return IoError(path + ": file exists (use --force to overwrite)");
      return IoError(path + ": cannot create: " + std::strerror(errno));
    }
  }
  if (options.rows_per_chunk == 0 || options.rows_per_chunk > kMaxRowsPerChunk)
    options.rows_per_chunk = kDefaultRowsPerChunk;
  std::unique_ptr<SbtWriter> w(new SbtWriter(fd, path, options, std::move(file)));
  ByteWriter header;
  header.PutBytes(kFileMagic, sizeof(kFileMagic));
  header.PutU16(kMajorVersion);
  header.PutU16(kMinorVersion);
  header.PutU32(0);  // flags
  header.PutU32(0);  // reserved
  header.PutU32(Crc32c(header.data(), header.size()));
  w->WriteBytes(header.data(), header.size());
  if (!w->status_.ok()) return w->status_;
  return w;
}

SbtWriter::SbtWriter(int fd, std::string path, SbtWriterOptions options,
                     std::unique_ptr<AtomicFile> file)
    : fd_(fd),
      file_(std::move(file)),
      path_(std::move(path)),
      options_(options),
      scratch_(std::make_unique<internal::CodecScratch>()) {}

SbtWriter::~SbtWriter() {
  if (!closed_) (void)Close();
}

void SbtWriter::WriteBytes(const void* data, size_t n) {
  if (!status_.ok()) return;
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      status_ =
          IoError(StrFormat("%s: write failed at byte %llu: %s", path_.c_str(),
                            static_cast<unsigned long long>(stats_.bytes), std::strerror(errno)));
      return;
    }
    p += w;
    n -= static_cast<size_t>(w);
    stats_.bytes += static_cast<uint64_t>(w);
  }
}

void SbtWriter::WriteChunk(ChunkType type, const ByteWriter& payload,
                           const ChunkIndexEntry& entry_in) {
  if (!status_.ok()) return;
  const uint8_t* data = payload.data();
  size_t stored = payload.size();
  uint16_t flags = 0;
  // The index stays uncompressed so that it can be validated cheaply on open.
  if (options_.zstd_level > 0 && payload.size() > 64 && type != ChunkType::kIndex) {
    compressed_.resize(ZSTD_compressBound(payload.size()));
    size_t c = ZSTD_compress(compressed_.data(), compressed_.size(), payload.data(), payload.size(),
                             options_.zstd_level);
    if (!ZSTD_isError(c) && c < payload.size()) {
      data = compressed_.data();
      stored = c;
      flags |= kChunkZstd;
    }
  }
  ChunkIndexEntry entry = entry_in;
  entry.offset = stats_.bytes;
  entry.type = static_cast<uint16_t>(type);
  ByteWriter header;
  header.PutU32(kChunkMagic);
  header.PutU16(static_cast<uint16_t>(type));
  header.PutU16(flags);
  header.PutU32(static_cast<uint32_t>(stored));
  header.PutU32(static_cast<uint32_t>(payload.size()));
  header.PutU32(Crc32c(data, stored));
  header.PutU32(Crc32c(header.data(), header.size()));
  // One write per chunk where possible keeps a killed process's file on a
  // chunk boundary most of the time; the reader copes either way.
  std::vector<uint8_t>& hb = header.buffer();
  hb.insert(hb.end(), data, data + stored);
  WriteBytes(hb.data(), hb.size());
  if (!status_.ok()) return;
  if (options_.sync_each_chunk) ::fdatasync(fd_);
  stats_.chunks++;
  stats_.raw_bytes += payload.size();
  stats_.rows += entry.rows;
  if (type != ChunkType::kIndex) index_.push_back(entry);
}

void SbtWriter::WriteStrings() {
  if (strings_flushed_ >= strings_.size()) return;
  // Split so that one chunk stays well under the reader's limit.
  while (strings_flushed_ < strings_.size()) {
    payload_.Clear();
    uint32_t first = strings_flushed_;
    uint32_t count = 0;
    size_t bytes = 0;
    ByteWriter body;
    while (strings_flushed_ < strings_.size() && bytes < (8u << 20)) {
      std::string_view s = strings_.Get(strings_flushed_++);
      body.PutString(s);
      bytes += s.size() + 1;
      ++count;
    }
    payload_.PutVarint(first);
    payload_.PutVarint(count);
    payload_.PutBytes(body.data(), body.size());
    ChunkIndexEntry e;
    e.rows = count;
    WriteChunk(ChunkType::kStrings, payload_, e);
  }
}

template <typename T>
void SbtWriter::WriteRows(const T* rows, size_t n) {
  if (n == 0 || !status_.ok()) return;
  if constexpr (RecordTraits<T>::kIsEvent) WriteDependencies();
  payload_.Clear();
  auto [lo, hi] = internal::EncodeTable(rows, n, &payload_, scratch_.get());
  ChunkIndexEntry e;
  e.table_kind = static_cast<uint16_t>(RecordTraits<T>::kKind);
  e.rows = n;
  e.min_ts = lo;
  e.max_ts = hi;
  WriteChunk(ChunkType::kTable, payload_, e);
}

template <typename T>
void SbtWriter::WriteTable() {
  auto& rows = pending_.Rows<T>();
  WriteRows(rows.data(), rows.size());
  rows.clear();
}

void SbtWriter::WriteDependencies() {
  WriteStrings();
  // All buffered metadata (stack tables, devices, ...) precedes the events
  // that may reference it, so every chunk-boundary prefix is self-contained.
  model::ForEachRecordType([&]<typename T>() {
    if constexpr (!RecordTraits<T>::kIsEvent) WriteTable<T>();
  });
}

Status SbtWriter::WriteRawChunk(uint16_t type, std::span<const uint8_t> payload) {
  if (type < kFirstRawChunkType || type > kLastRawChunkType)
    return InvalidArgument(StrFormat("raw chunk type 0x%x is outside the replay range 0x%x-0x%x",
                                     type, kFirstRawChunkType, kLastRawChunkType));
  if (payload.size() > kMaxChunkRawBytes)
    return InvalidArgument(StrFormat("raw chunk of %zu bytes exceeds the %u-byte chunk limit",
                                     payload.size(), kMaxChunkRawBytes));
  if (closed_) return FailedPrecondition(path_ + ": WriteRawChunk after Close");
  payload_.Clear();
  payload_.PutBytes(payload.data(), payload.size());
  WriteChunk(static_cast<ChunkType>(type), payload_, ChunkIndexEntry{});
  return status_;
}

Status SbtWriter::Flush() {
  if (closed_) return status_;
  WriteDependencies();
  model::ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) WriteTable<T>();
  });
  return status_;
}

Status SbtWriter::Close() {
  if (closed_) return status_;
  (void)Flush();
  if (status_.ok()) {
    uint64_t index_offset = stats_.bytes;
    payload_.Clear();
    payload_.PutVarint(index_.size());
    for (const ChunkIndexEntry& e : index_) {
      payload_.PutVarint(e.offset);
      payload_.PutVarint(e.type);
      payload_.PutVarint(e.table_kind);
      payload_.PutVarint(e.rows);
      payload_.PutVarint(e.min_ts);
      payload_.PutVarint(e.max_ts);
    }
    WriteChunk(ChunkType::kIndex, payload_, ChunkIndexEntry{});
    ByteWriter trailer;
    trailer.PutU64(index_offset);
    trailer.PutBytes(kTrailerMagic, sizeof(kTrailerMagic));
    WriteBytes(trailer.data(), trailer.size());
  }
  closed_ = true;
  if (file_) {  // renamed into place only when complete
    if (status_.ok()) status_ = file_->Commit();
    file_->Discard();  // after an error: no partial file (a no-op once committed)
    return status_;
  }
  if (::close(fd_) != 0 && status_.ok())
    status_ = IoError(path_ + ": close failed: " + std::strerror(errno));
  return status_;
}

Status WriteTraceFile(const model::Trace& trace, const std::string& path,
                      SbtWriterOptions options) {
  options.replace_atomically = true;
  ASSIGN_OR_RETURN(auto writer, SbtWriter::Open(path, options));
  writer->AdoptStrings(trace.strings);
  // Metadata (stack tables included) before the events that reference it.
  model::ForEachRecordType([&]<typename T>() {
    if constexpr (!RecordTraits<T>::kIsEvent)
      writer->AppendRows(trace.Rows<T>().data(), trace.Rows<T>().size());
  });
  model::ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent)
      writer->AppendRows(trace.Rows<T>().data(), trace.Rows<T>().size());
  });
  return writer->Close();
}

// Append/AppendRows are templates in the header; their out-of-line parts are
// instantiated here for every record type.
#define TS_INSTANTIATE_WRITER(T, ...)              \
  template void SbtWriter::WriteTable<model::T>(); \
  template void SbtWriter::WriteRows<model::T>(const model::T*, size_t);
TS_FOR_EACH_RECORD_TYPE(TS_INSTANTIATE_WRITER)
#undef TS_INSTANTIATE_WRITER

}  // namespace tracesmith::format
