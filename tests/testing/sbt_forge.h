// Forges SBT files the way a hostile user would: valid checksums around
// values no writer produces. For reader robustness tests and fuzz seeds.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "tracesmith/base/bytes.h"
#include "tracesmith/base/crc32c.h"
#include "tracesmith/format/sbt.h"

namespace tracesmith::testing {

// Rewrites the footer index of a finished SBT file so that every table
// chunk's entry claims `rows` rows (checksums recomputed: the index still
// looks valid). Returns an empty vector when `file` has no index.
inline std::vector<uint8_t> ForgeIndexRows(const std::vector<uint8_t>& file, uint64_t rows) {
  using namespace format;
  if (file.size() < kFileHeaderSize + kChunkHeaderSize + kTrailerSize) return {};
  uint64_t index_offset;
  std::memcpy(&index_offset, file.data() + file.size() - kTrailerSize, 8);
  if (index_offset + kChunkHeaderSize > file.size() - kTrailerSize) return {};
  const uint8_t* payload = file.data() + index_offset + kChunkHeaderSize;
  ByteCursor in(payload, file.size() - kTrailerSize - index_offset - kChunkHeaderSize);
  ByteWriter out;
  uint64_t n;
  if (!in.ReadVarint(&n)) return {};
  out.PutVarint(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t v[6];
    for (uint64_t& x : v)
      if (!in.ReadVarint(&x)) return {};
    if (v[1] == static_cast<uint64_t>(ChunkType::kTable)) v[3] = rows;
    for (uint64_t x : v) out.PutVarint(x);
  }
  std::vector<uint8_t> forged(file.begin(), file.begin() + static_cast<ptrdiff_t>(index_offset));
  ByteWriter header;
  header.PutU32(kChunkMagic);
  header.PutU16(static_cast<uint16_t>(ChunkType::kIndex));
  header.PutU16(0);
  header.PutU32(static_cast<uint32_t>(out.size()));
  header.PutU32(static_cast<uint32_t>(out.size()));
  header.PutU32(Crc32c(out.data(), out.size()));
  header.PutU32(Crc32c(header.data(), header.size()));
  forged.insert(forged.end(), header.data(), header.data() + header.size());
  forged.insert(forged.end(), out.data(), out.data() + out.size());
  forged.insert(forged.end(), file.end() - kTrailerSize, file.end());  // same offset, same magic
  return forged;
}

// A file header as the writer writes it (format 1.0).
inline std::vector<uint8_t> ForgeFileHeader() {
  using namespace format;
  ByteWriter h;
  h.PutBytes(kFileMagic, sizeof(kFileMagic));
  h.PutU16(kMajorVersion);
  h.PutU16(kMinorVersion);
  h.PutU32(0);
  h.PutU32(0);
  h.PutU32(Crc32c(h.data(), h.size()));
  return h.buffer();
}

// Appends a chunk with valid checksums whose header claims `raw_len` and the
// given flags (format::kChunkZstd: "payload is a zstd frame of raw_len
// bytes") over whatever `payload` holds.
inline void AppendForgedChunk(std::vector<uint8_t>* file, uint16_t type, uint16_t flags,
                              uint32_t raw_len, const std::vector<uint8_t>& payload) {
  using namespace format;
  ByteWriter h;
  h.PutU32(kChunkMagic);
  h.PutU16(type);
  h.PutU16(flags);
  h.PutU32(static_cast<uint32_t>(payload.size()));
  h.PutU32(raw_len);
  h.PutU32(Crc32c(payload.data(), payload.size()));
  h.PutU32(Crc32c(h.data(), h.size()));
  file->insert(file->end(), h.data(), h.data() + h.size());
  file->insert(file->end(), payload.begin(), payload.end());
}

}  // namespace tracesmith::testing
