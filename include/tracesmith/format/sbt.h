// SBT v1 ("Smith Binary Trace") constants. The byte layout is specified in
// docs/sbt-format.md; this header is its single source of numbers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracesmith::format {

// PNG-style magic: a non-ASCII first byte, CR LF and ^Z catch text-mode damage.
inline constexpr uint8_t kFileMagic[8] = {0x89, 'S', 'B', 'T', '\r', '\n', 0x1a, '\n'};
inline constexpr uint16_t kMajorVersion = 1;  // readers refuse a newer major
inline constexpr uint16_t kMinorVersion = 0;  // additive changes only
inline constexpr size_t kFileHeaderSize = 24;

inline constexpr uint32_t kChunkMagic = 0x6b484353;  // "SCHk" little-endian
inline constexpr size_t kChunkHeaderSize = 24;

enum class ChunkType : uint16_t {
  kStrings = 1,  // interned strings, consecutive ids
  kTable = 2,    // rows of one record kind (model::TableKind), columnar
  kIndex = 3,    // footer index: every chunk's offset, kind, rows, time range
  // 0x40-0x7f reserved for replay payloads (modules, parameters, memory images).
};
// Replay payload chunks: written by SbtWriter::WriteRawChunk, read back by
// SbtReader::ReadRawChunks; other readers skip them. Layout: docs/replay-format.md.
inline constexpr uint16_t kFirstRawChunkType = 0x40;
inline constexpr uint16_t kLastRawChunkType = 0x7f;

enum ChunkFlags : uint16_t {
  kChunkZstd = 1,  // payload is one zstd frame; raw_len is its decompressed size
};

// The last 16 bytes of a finished file: index chunk offset + this magic.
inline constexpr uint8_t kTrailerMagic[8] = {'S', 'B', 'T', 'I', 'N', 'D', 'E', 'X'};
inline constexpr size_t kTrailerSize = 16;

// Limits a reader enforces before allocating (the writer stays well below).
inline constexpr uint32_t kMaxChunkRawBytes = 64u << 20;  // 64 MiB
inline constexpr uint32_t kMaxRowsPerChunk = 1u << 17;
inline constexpr uint32_t kDefaultRowsPerChunk = 1u << 16;

}  // namespace tracesmith::format
