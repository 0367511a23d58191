#include "tracesmith/format/sbt_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "chunk_decompressor.h"
#include "table_codec.h"
#include "tracesmith/base/bytes.h"
#include "tracesmith/base/crc32c.h"

namespace tracesmith::format {

struct internal::ChunkHeader {
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t stored_len = 0;
  uint32_t raw_len = 0;
  uint32_t payload_crc = 0;
};

namespace {

using internal::ChunkHeader;

// Parses and checks the 24-byte chunk header at `p` (caller ensures 24 bytes).
bool ParseChunkHeader(const uint8_t* p, ChunkHeader* h) {
  ByteCursor c(p, kChunkHeaderSize);
  uint32_t magic = 0, header_crc = 0;
  c.ReadU32(&magic);
  c.ReadU16(&h->type);
  c.ReadU16(&h->flags);
  c.ReadU32(&h->stored_len);
  c.ReadU32(&h->raw_len);
  c.ReadU32(&h->payload_crc);
  c.ReadU32(&header_crc);
  return magic == kChunkMagic && header_crc == Crc32c(p, kChunkHeaderSize - 4);
}

const char* ChunkTypeName(uint16_t type) {
  switch (static_cast<ChunkType>(type)) {
    case ChunkType::kStrings:
      return "strings";
    case ChunkType::kTable:
      return "table";
    case ChunkType::kIndex:
      return "index";
  }
  if (type >= kFirstRawChunkType && type <= kLastRawChunkType) return "replay payload";
  return "unknown";
}

std::string At(uint64_t offset) {
  return StrFormat("byte %llu (0x%llx)", static_cast<unsigned long long>(offset),
                   static_cast<unsigned long long>(offset));
}

}  // namespace

std::string ReadReport::Describe() const {
  std::string out;
  for (const Damage& d : damage)
    out += StrFormat("%s, %llu bytes: %s\n", At(d.offset).c_str(),
                     static_cast<unsigned long long>(d.length), d.what.c_str());
  return out;
}

std::string ReadReport::Headline(const std::string& path) const {
  std::string out = StrFormat("%s is damaged (%llu of %llu bytes readable", path.c_str(),
                              static_cast<unsigned long long>(valid_bytes),
                              static_cast<unsigned long long>(file_size));
  if (events_lost)
    out += StrFormat(", %llu events skipped", static_cast<unsigned long long>(events_lost));
  return out + ")";
}

Status ReadReport::DamageStatus(const std::string& path) const {
  if (clean()) return OkStatus();
  std::string ranges = Describe();
  ranges.pop_back();  // the last line's '\n': the caller ends the message
  return DataLoss(Headline(path) + ":\n" + ranges);
}

SbtReader::~SbtReader() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

StatusOr<std::unique_ptr<SbtReader>> SbtReader::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // (forever, for a hostile path); it is refused below like any non-file.
  // Reads of a regular file ignore the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return NotFound(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  std::unique_ptr<SbtReader> r(new SbtReader());
  r->size_ = static_cast<size_t>(st.st_size);
  if (r->size_ > 0) {
    void* m = ::mmap(nullptr, r->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      return IoError(path + ": mmap failed: " + std::strerror(errno));
    }
    ::madvise(m, r->size_, MADV_SEQUENTIAL);
    r->mapping_ = m;
    r->data_ = static_cast<const uint8_t*>(m);
  }
  ::close(fd);
  Status s = r->Init();
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  return r;
}

StatusOr<std::unique_ptr<SbtReader>> SbtReader::FromMemory(std::span<const uint8_t> bytes) {
  std::unique_ptr<SbtReader> r(new SbtReader());
  r->data_ = bytes.data();
  r->size_ = bytes.size();
  RETURN_IF_ERROR(r->Init());
  return r;
}

void SbtReader::AddDamage(uint64_t offset, uint64_t length, std::string what) {
  report_.damage.push_back(Damage{offset, length, std::move(what)});
  damaged_at_.insert(offset);
}

void SbtReader::CountReadable(size_t i, uint64_t bytes, uint64_t* chunks) {
  if (counted_.size() < chunks_.size()) counted_.resize(chunks_.size());
  if (!(counted_[i] & 1)) report_.valid_bytes += bytes;
  counted_[i] |= 1;
  if (chunks == nullptr || (counted_[i] & 2)) return;
  counted_[i] |= 2;
  ++*chunks;
}

void SbtReader::NoteWhatWasSkipped(size_t i, size_t first) {
  if (!report_.indexed || report_.damage.size() == first) return;
  const ChunkIndexEntry& e = chunks_[i];
  if (e.rows == 0) return;
  const auto rows = static_cast<unsigned long long>(e.rows);
  std::string skipped;
  if (e.type == uint16_t(ChunkType::kStrings)) {
    skipped = StrFormat("%llu strings", rows);
  } else if (e.type == uint16_t(ChunkType::kTable)) {
    model::ForEachRecordType([&]<typename T>() {
      if (uint16_t(model::RecordTraits<T>::kKind) != e.table_kind) return;
      const bool event = model::RecordTraits<T>::kIsEvent;
      skipped =
          StrFormat("%llu %s %s", rows, model::RecordTraits<T>::kLabel, event ? "events" : "rows");
      if (event) report_.events_lost += e.rows;  // each <= kMaxRowsPerChunk (LoadIndex)
    });
  }
  if (!skipped.empty()) report_.damage.back().what += " (" + skipped + " skipped)";
}

Status SbtReader::Init() {
  report_.file_size = size_;
  if (size_ < kFileHeaderSize)
    return DataLoss(StrFormat("file is %zu bytes, shorter than the %zu-byte SBT header", size_,
                              kFileHeaderSize));
  if (std::memcmp(data_, kFileMagic, sizeof(kFileMagic)) != 0)
    return InvalidArgument("not an SBT trace (bad magic at byte 0)");
  ByteCursor c(data_ + 8, kFileHeaderSize - 8);
  uint32_t flags, reserved, crc;
  c.ReadU16(&report_.major);
  c.ReadU16(&report_.minor);
  c.ReadU32(&flags);
  c.ReadU32(&reserved);
  c.ReadU32(&crc);
  if (crc != Crc32c(data_, kFileHeaderSize - 4))
    return DataLoss("file header checksum mismatch at byte 20");
  if (report_.major > kMajorVersion)
    return Unimplemented(StrFormat(
        "written in SBT format %u.%u by a newer TraceSmith; this build reads format %u.x: "
        "upgrade TraceSmith",
        report_.major, report_.minor, kMajorVersion));
  report_.valid_bytes = kFileHeaderSize;
  if (!LoadIndex()) {
    // A trailer means the writer closed the file: an index that cannot be
    // used is damage, not the mark of a writer that stopped early.
    report_.index_damaged = size_ >= kFileHeaderSize + kTrailerSize &&
                            std::memcmp(data_ + size_ - sizeof(kTrailerMagic), kTrailerMagic,
                                        sizeof(kTrailerMagic)) == 0;
    Scan();
  }
  return OkStatus();
}

bool SbtReader::LoadIndex() {
  if (size_ < kFileHeaderSize + kChunkHeaderSize + kTrailerSize) return false;
  const uint8_t* t = data_ + size_ - kTrailerSize;
  if (std::memcmp(t + 8, kTrailerMagic, sizeof(kTrailerMagic)) != 0) return false;
  uint64_t index_offset;
  std::memcpy(&index_offset, t, 8);
  const uint64_t limit = size_ - kTrailerSize;
  if (index_offset < kFileHeaderSize || index_offset > limit - kChunkHeaderSize) return false;
  ChunkHeader h;
  if (!ParseChunkHeader(data_ + index_offset, &h) || h.type != uint16_t(ChunkType::kIndex) ||
      h.flags != 0 || h.stored_len != limit - index_offset - kChunkHeaderSize ||
      h.payload_crc != Crc32c(data_ + index_offset + kChunkHeaderSize, h.stored_len))
    return false;
  ByteCursor c(data_ + index_offset + kChunkHeaderSize, h.stored_len);
  uint64_t n;
  if (!c.ReadVarint(&n) || n > c.remaining() / 6) return false;
  std::vector<ChunkIndexEntry> entries(n);
  uint64_t prev_end = kFileHeaderSize;
  for (auto& e : entries) {
    uint64_t type, kind;
    if (!c.ReadVarint(&e.offset) || !c.ReadVarint(&type) || !c.ReadVarint(&kind) ||
        !c.ReadVarint(&e.rows) || !c.ReadVarint(&e.min_ts) || !c.ReadVarint(&e.max_ts))
      return false;
    // Entries must tile the file in order; anything else means "scan instead".
    if (e.offset < prev_end || e.offset > index_offset - kChunkHeaderSize || type > 0xffff ||
        kind > 0xffff)
      return false;
    // Row counts are sized against what a chunk can hold (the writer never
    // exceeds them), so that every sum of them below stays far from overflow.
    if (e.rows > (type == uint16_t(ChunkType::kTable) ? kMaxRowsPerChunk : kMaxChunkRawBytes))
      return false;
    e.type = static_cast<uint16_t>(type);
    e.table_kind = static_cast<uint16_t>(kind);
    prev_end = e.offset + kChunkHeaderSize;
  }
  if (!c.empty()) return false;
  chunks_ = std::move(entries);
  report_.indexed = true;
  report_.valid_bytes += kChunkHeaderSize + h.stored_len + kTrailerSize;
  return true;
}

void SbtReader::Scan() {
  uint64_t pos = kFileHeaderSize;
  const uint64_t end = size_;
  while (pos < end) {
    ChunkHeader h;
    if (end - pos < kChunkHeaderSize) {
      AddDamage(pos, end - pos,
                "file ends inside a chunk header (truncated: the writer did not finish)");
      return;
    }
    if (!ParseChunkHeader(data_ + pos, &h)) {
      // Resynchronise on the next header whose magic and checksum are valid:
      // memchr to each candidate first byte, at most kScanStep at a time,
      // with the pages passed given back so that a long damaged stretch (a
      // zero-filled or sparse 2 GB tail) is never resident whole.
      constexpr uint64_t kScanStep = 16 << 20;
      uint64_t next = pos + 1, released = pos;
      while (next + kChunkHeaderSize <= end) {
        const uint64_t stop = std::min(end - kChunkHeaderSize + 1, next + kScanStep);
        const void* hit = std::memchr(data_ + next, 0x53, stop - next);
        if (hit == nullptr) {
          next = stop;
          ReleaseMapped(released, next);
          released = next;
          continue;
        }
        next = uint64_t(static_cast<const uint8_t*>(hit) - data_);
        if (ParseChunkHeader(data_ + next, &h)) break;
        ++next;
      }
      if (next + kChunkHeaderSize > end) next = end;
      AddDamage(pos, next - pos, "corrupt chunk header; bytes skipped");
      pos = next;
      continue;
    }
    uint64_t chunk_end = pos + kChunkHeaderSize + h.stored_len;
    if (chunk_end > end) {
      AddDamage(pos, end - pos,
                StrFormat("%s chunk declares %u payload bytes but only %llu remain "
                          "(truncated: the writer did not finish)",
                          ChunkTypeName(h.type), h.stored_len,
                          static_cast<unsigned long long>(end - pos - kChunkHeaderSize)));
      return;
    }
    if (h.type == uint16_t(ChunkType::kIndex)) {
      // An index with a trailer after it: the writer closed the file, and
      // LoadIndex refused the pair (else there would be no scan).
      if (end - chunk_end == kTrailerSize) {
        report_.index_damaged = true;  // not in chunks_damaged: no data is lost
        AddDamage(pos, end - pos,
                  "footer index or trailer is corrupt (the writer closed the file); every "
                  "chunk before it was found by scanning");
        return;
      }
      pos = chunk_end;
      continue;
    }
    ChunkIndexEntry e;
    e.offset = pos;
    e.type = h.type;
    chunks_.push_back(e);
    pos = chunk_end;
  }
}

bool SbtReader::CheckChunk(size_t i, ChunkHeader* h, std::string* where) {
  const ChunkIndexEntry& e = chunks_[i];
  if (damaged_at_.contains(e.offset)) return false;  // reported by an earlier pass
  *where = StrFormat("chunk #%zu at %s", i, At(e.offset).c_str());
  if (e.offset + kChunkHeaderSize > size_ || !ParseChunkHeader(data_ + e.offset, h)) {
    AddDamage(e.offset, kChunkHeaderSize, *where + ": corrupt chunk header");
    return false;
  }
  *where = StrFormat("%s chunk #%zu at %s", ChunkTypeName(h->type), i, At(e.offset).c_str());
  if (e.offset + kChunkHeaderSize + h->stored_len > size_) {
    AddDamage(e.offset, size_ - e.offset, *where + ": payload runs past the end of the file");
    return false;
  }
  if (Crc32c(data_ + e.offset + kChunkHeaderSize, h->stored_len) != h->payload_crc) {
    AddDamage(e.offset, kChunkHeaderSize + h->stored_len, *where + ": payload checksum mismatch");
    report_.chunks_damaged++;
    return false;
  }
  return true;
}

StatusOr<std::optional<std::span<const uint8_t>>> SbtReader::RawPayload(const ChunkIndexEntry& e,
                                                                        const ChunkHeader& h,
                                                                        const std::string& where) {
  const uint8_t* payload = data_ + e.offset + kChunkHeaderSize;
  const uint64_t chunk_bytes = kChunkHeaderSize + h.stored_len;
  if (h.flags & kChunkZstd) {
    auto raw = zstd_->Decompress(std::span(payload, h.stored_len), h.raw_len);
    if (raw.status().code() == StatusCode::kFailedPrecondition)
      return FailedPrecondition(where + ": " + raw.status().message());
    if (raw.ok()) return std::optional(*raw);
    AddDamage(e.offset, chunk_bytes, where + ": " + raw.status().message());
  } else if (h.raw_len == h.stored_len) {
    return std::optional(std::span<const uint8_t>(payload, h.raw_len));
  } else {
    AddDamage(e.offset, chunk_bytes, where + ": raw length differs from stored length");
  }
  report_.chunks_damaged++;
  return std::optional<std::span<const uint8_t>>();
}

Status SbtReader::DecodeChunk(size_t i, model::Trace* out, uint64_t* decoded_bytes, uint64_t budget,
                              uint16_t* decoded_kind) {
  *decoded_kind = 0;
  const ChunkIndexEntry& e = chunks_[i];
  ChunkHeader h;
  std::string where;
  if (!CheckChunk(i, &h, &where)) return OkStatus();
  const uint64_t chunk_bytes = kChunkHeaderSize + h.stored_len;
  if (h.type != uint16_t(ChunkType::kStrings) && h.type != uint16_t(ChunkType::kTable)) {
    CountReadable(i, chunk_bytes, &report_.chunks_skipped_unknown);
    return OkStatus();
  }
  ASSIGN_OR_RETURN(std::optional<std::span<const uint8_t>> raw, RawPayload(e, h, where));
  if (!raw) return OkStatus();
  ByteCursor c(raw->data(), raw->size());
  Status st;
  if (h.type == uint16_t(ChunkType::kStrings)) {
    uint64_t first, count;
    if (!c.ReadVarint(&first) || !c.ReadVarint(&count) || first == 0 || first > size_ ||
        count > c.remaining()) {
      st = DataLoss("bad strings header");
    } else {
      for (uint64_t k = 0; k < count && st.ok(); ++k) {
        std::string_view s;
        if (!c.ReadString(&s))
          st = DataLoss(StrFormat("string %llu truncated", static_cast<unsigned long long>(k)));
        else
          out->strings.Set(static_cast<uint32_t>(first + k), s);
      }
    }
  } else {
    uint16_t kind;
    uint64_t rows = 0;
    ByteCursor peek = c;
    if (!c.ReadU16(&kind) || !(peek.Skip(2) && peek.ReadVarint(&rows))) {
      st = DataLoss("table header truncated");
    } else if (!model::IsKnownTableKind(kind)) {
      CountReadable(i, chunk_bytes, &report_.chunks_skipped_unknown);
      return OkStatus();
    } else {
      // One scratch per thread, not per reader: only one chunk decodes at a
      // time on a thread, and a run read on the fly keeps a reader per input
      // open (16-32 MB of columns each at 64-128K rows).
      static thread_local internal::CodecScratch scratch;
      model::ForEachRecordType([&]<typename T>() {
        if (static_cast<uint16_t>(model::RecordTraits<T>::kKind) != kind) return;
        uint64_t need = std::min<uint64_t>(rows, kMaxRowsPerChunk) * sizeof(T);
        if (*decoded_bytes + need > budget) {
          st = FailedPrecondition(where + ": " + OverLimit(budget).message());
          return;
        }
        st = internal::DecodeTable(&c, &out->Rows<T>(), &scratch);
        if (st.ok()) {
          *decoded_bytes += need;
          *decoded_kind = kind;
        }
      });
      if (st.code() == StatusCode::kFailedPrecondition) return st;
    }
  }
  if (!st.ok()) {
    AddDamage(e.offset, chunk_bytes, where + ": " + st.message());
    report_.chunks_damaged++;
    return OkStatus();
  }
  CountReadable(i, chunk_bytes, &report_.chunks_read);
  return OkStatus();
}

void SbtReader::StartPass() {
  if (!zstd_) zstd_ = std::make_unique<internal::ChunkDecompressor>();
  zstd_->StartPass(size_);
}

// An eighth of physical memory, at least 64 MiB.
static uint64_t DecodeAllowance() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const uint64_t ram = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
  return std::max<uint64_t>(64ull << 20, ram / 8);
}

uint64_t DecodeLimitFor(uint64_t input_bytes) {
  // A captured trace decodes to ~17x its size (136-byte kernel rows from ~8
  // bytes); rows that repeat exactly (a synthetic or converted trace, a
  // forged file) are stored as constant columns and decode to any multiple.
  // Both are valid, so the limit is about memory: 256x the file plus an
  // eighth of the machine's memory.
  if (const char* mb = getenv("TRACESMITH_MAX_DECODED_MB")) {
    uint64_t v = strtoull(mb, nullptr, 10);
    if (v > 0) return v << 20;
  }
  return DecodeAllowance() + 256ull * input_bytes;
}

uint64_t SbtReader::DecodeLimit() const { return DecodeLimitFor(size_); }

void ReserveFromIndex(const std::vector<ChunkIndexEntry>& chunks, uint64_t budget,
                      model::Trace* out) {
  // Computed without overflow: the sum stops once past what the budget holds.
  model::ForEachRecordType([&]<typename T>() {
    const uint64_t max_rows = budget / sizeof(T);
    uint64_t rows = 0;
    for (const ChunkIndexEntry& e : chunks) {
      if (e.type != uint16_t(ChunkType::kTable) ||
          e.table_kind != uint16_t(model::RecordTraits<T>::kKind))
        continue;
      rows += std::min<uint64_t>(e.rows, kMaxRowsPerChunk);
      if (rows > max_rows) break;
    }
    auto& v = out->Rows<T>();
    if (rows <= max_rows && rows <= v.max_size() - v.size()) v.reserve(v.size() + rows);
  });
}

Status SbtReader::OverLimit(uint64_t limit) const {
  return FailedPrecondition(StrFormat(
      "the chunks decode to more than %llu MiB (256x the file's %llu bytes + an eighth of this "
      "machine's memory): a forged or corrupt file, or one too large for this machine; "
      "TRACESMITH_MAX_DECODED_MB=N reads it anyway",
      static_cast<unsigned long long>(limit >> 20), static_cast<unsigned long long>(size_)));
}

Status SbtReader::ReadAll(model::Trace* out, ReadOptions options) {
  StartPass();
  uint64_t budget = options.max_decoded_bytes;
  if (budget == 0) budget = DecodeLimit();
  uint64_t decoded = 0;
  if (report_.indexed) ReserveFromIndex(chunks_, budget, out);  // no reallocation while decoding
  uint16_t kind;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    const size_t damage_before = report_.damage.size();
    RETURN_IF_ERROR(DecodeChunk(i, out, &decoded, budget, &kind));
    // Its rows are decoded: the chunk's mapped pages go back, as in a streamed pass.
    ReleaseMapped(chunks_[i].offset, i + 1 < chunks_.size() ? chunks_[i + 1].offset : size_);
    NoteWhatWasSkipped(i, damage_before);
  }
  return OkStatus();
}

void SbtReader::ReleaseMapped(uint64_t begin, uint64_t end) {
  // Pages read from a file mapping stay resident (and count in the process's
  // RSS) until the kernel needs them back: a streamed pass over a 1 GB trace
  // would end holding the whole file. The mapping is private and never
  // written, so dropped pages read back from the file if touched again.
  if (mapping_ == nullptr) return;
  static const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  begin = begin / page * page;
  end = std::min<uint64_t>(end, size_) / page * page;
  if (end > begin) ::madvise(static_cast<uint8_t*>(mapping_) + begin, end - begin, MADV_DONTNEED);
}

SbtReader::EventCursor::EventCursor(SbtReader* reader, const EventKindFilter& wanted)
    : reader_(reader) {
  reader_->StartPass();
  if (wanted) {
    model::ForEachRecordType([&]<typename T>() {
      using Traits = model::RecordTraits<T>;
      if (!Traits::kIsEvent || wanted(Traits::kKind)) return;
      const size_t k = size_t(Traits::kKind);
      if (skip_.size() <= k) skip_.resize(k + 1);
      skip_[k] = true;
    });
  }
  const std::vector<ChunkIndexEntry>& chunks = reader_->chunks_;
  suffix_min_.assign(chunks.size(), ~0ull);
  for (size_t i = chunks.size(); i-- > 0;) {
    const ChunkIndexEntry& e = chunks[i];
    uint64_t here = ~0ull;
    if (e.type == uint16_t(ChunkType::kTable) &&
        !(e.table_kind < skip_.size() && skip_[e.table_kind]) &&
        (e.table_kind == 0 || e.table_kind < uint16_t(model::TableKind::kDevice)))
      here = e.table_kind == 0 ? 0 : e.min_ts;  // kind 0: scanned, not indexed: unknown
    suffix_min_[i] = std::min<uint64_t>(here, i + 1 < chunks.size() ? suffix_min_[i + 1] : ~0ull);
  }
  // Metadata stays in memory (`decoded_`); event rows go to the caller, but
  // what its consumers keep grows with all of them (`all_decoded_`): both are
  // held to the limit.
  limit_ = reader_->DecodeLimit();
}

void SbtReader::EventCursor::ClearLastRows(bool free_memory) {
  if (!last_kind_) return;
  model::ForEachRecordType([&]<typename T>() {
    if constexpr (model::RecordTraits<T>::kIsEvent) {
      if (uint16_t(model::RecordTraits<T>::kKind) != last_kind_) return;
      // Only metadata stays charged against the budget.
      decoded_ -= std::min<uint64_t>(decoded_, batch_.Rows<T>().size() * sizeof(T));
      batch_.Rows<T>().clear();
      if (free_memory) batch_.Rows<T>().shrink_to_fit();
    }
  });
  last_kind_ = 0;
}

StatusOr<bool> SbtReader::EventCursor::Next(model::TableKind* kind) {
  ClearLastRows();
  stepped_over_ = false;
  SbtReader& r = *reader_;
  const std::vector<ChunkIndexEntry>& chunks = r.chunks_;
  while (next_ < chunks.size()) {
    const size_t i = next_++;
    const ChunkIndexEntry& e = chunks[i];
    const uint64_t end = i + 1 < chunks.size() ? chunks[i + 1].offset : r.size_;
    const size_t damage_before = r.report_.damage.size();
    // StepEveryEventChunk: an event chunk by the index ends this call even
    // when it gives no rows.
    const bool step = step_every_event_chunk_ && e.type == uint16_t(ChunkType::kTable) &&
                      e.table_kind != 0 && e.table_kind < uint16_t(model::TableKind::kDevice);
    auto step_over = [&] {
      *kind = static_cast<model::TableKind>(e.table_kind);
      stepped_over_ = true;
      return true;
    };
    if (e.type == uint16_t(ChunkType::kTable) && e.table_kind < skip_.size() &&
        skip_[e.table_kind]) {
      // Not decoded, but checked (header and checksum: no decompression), so
      // damage anywhere in the file is reported whatever the reader wants.
      ChunkHeader h;
      std::string where;
      if (r.CheckChunk(i, &h, &where)) r.CountReadable(i, kChunkHeaderSize + h.stored_len, nullptr);
      r.ReleaseMapped(e.offset, end);
      r.NoteWhatWasSkipped(i, damage_before);
      if (step) return step_over();
      continue;
    }
    uint16_t decoded_kind;
    const uint64_t before = decoded_;
    RETURN_IF_ERROR(r.DecodeChunk(i, &batch_, &decoded_, limit_, &decoded_kind));
    r.ReleaseMapped(e.offset, end);
    all_decoded_ += decoded_ - before;
    if (all_decoded_ > limit_) return r.OverLimit(limit_);
    r.NoteWhatWasSkipped(i, damage_before);
    if (decoded_kind == 0) {
      if (step) return step_over();
      continue;
    }
    bool event = false;
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (model::RecordTraits<T>::kIsEvent)
        if (uint16_t(model::RecordTraits<T>::kKind) == decoded_kind) {
          event = true;
          *kind = model::RecordTraits<T>::kKind;
        }
    });
    if (!event) {  // a metadata table: kept in batch_
      if (step) return step_over();
      continue;
    }
    last_kind_ = decoded_kind;
    return true;
  }
  return false;
}

SbtReader::EventCursor SbtReader::Events(const EventKindFilter& wanted) {
  return EventCursor(this, wanted);
}

Status SbtReader::Stream(const EventChunkCallback& on_events, const EndCallback& on_end,
                         const EventKindFilter& wanted) {
  EventCursor cursor = Events(wanted);
  model::TableKind kind;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, cursor.Next(&kind));
    if (!more) break;
    RETURN_IF_ERROR(on_events(cursor.batch(), kind));
  }
  return on_end ? on_end(cursor.batch()) : OkStatus();
}

Status SbtReader::ReadRawChunks(uint16_t type, const RawChunkCallback& on_chunk) {
  if (type < kFirstRawChunkType || type > kLastRawChunkType)
    return InvalidArgument(StrFormat("chunk type 0x%x is not a raw (replay payload) type", type));
  StartPass();
  for (size_t i = 0; i < chunks_.size(); ++i) {
    const ChunkIndexEntry& e = chunks_[i];
    if (e.type != type || damaged_at_.contains(e.offset)) continue;
    ChunkHeader h;
    const std::string where =
        StrFormat("replay payload chunk #%zu (type 0x%x) at %s", i, type, At(e.offset).c_str());
    if (e.offset + kChunkHeaderSize > size_ || !ParseChunkHeader(data_ + e.offset, &h) ||
        h.type != type) {
      AddDamage(e.offset, kChunkHeaderSize, where + ": corrupt chunk header");
      report_.chunks_damaged++;
      continue;
    }
    if (e.offset + kChunkHeaderSize + h.stored_len > size_) {
      AddDamage(e.offset, size_ - e.offset, where + ": payload runs past the end of the file");
      report_.chunks_damaged++;
      continue;
    }
    const uint8_t* payload = data_ + e.offset + kChunkHeaderSize;
    const uint64_t chunk_bytes = kChunkHeaderSize + h.stored_len;
    if (Crc32c(payload, h.stored_len) != h.payload_crc) {
      AddDamage(e.offset, chunk_bytes, where + ": payload checksum mismatch");
      report_.chunks_damaged++;
      continue;
    }
    ASSIGN_OR_RETURN(std::optional<std::span<const uint8_t>> raw, RawPayload(e, h, where));
    if (!raw) continue;
    RETURN_IF_ERROR(on_chunk(*raw, e.offset));
  }
  return OkStatus();
}

StatusOr<model::Trace> ReadTraceFile(const std::string& path, ReadReport* report,
                                     ReadOptions options) {
  ASSIGN_OR_RETURN(auto reader, SbtReader::Open(path));
  model::Trace trace;
  Status st = reader->ReadAll(&trace, options);
  if (!st.ok()) return Status(st.code(), path + ": " + st.message());
  if (report) *report = reader->report();
  return trace;
}

bool HasReplayPayloads(const std::string& path) {
  auto reader = SbtReader::Open(path);
  if (!reader.ok()) return false;
  for (const ChunkIndexEntry& e : (*reader)->chunks())
    if (e.type >= kFirstRawChunkType && e.type <= kLastRawChunkType) return true;
  return false;
}

}  // namespace tracesmith::format
