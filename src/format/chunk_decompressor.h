// ChunkDecompressor: inflates the zstd payloads of SBT chunks for SbtReader
// with work bounded by the file, whatever its headers claim. A chunk header
// may declare up to 64 MiB of raw bytes over a few bytes of junk; allocating
// and zeroing that much per chunk made a 3.6 KB file take 22 s to open.
//
// Before any output is written a payload is refused (DataLoss, the chunk is
// damaged) when its declared size is more than zstd can expand those bytes
// to, or differs from the size its zstd frame header declares. Output goes
// to one buffer per thread reused across chunks and readers (never
// zero-filled: a run read on the fly keeps a reader per input open, and each
// held its own context and a buffer of the largest chunk it had read), and
// each pass over the file may produce at most 1 GiB + 256 x its
// size (FailedPrecondition beyond).
#pragma once

#include <cstdint>
#include <span>

#include "tracesmith/base/status.h"

namespace tracesmith::format::internal {

// zstd output per input byte is bounded: a frame is made of blocks of at most
// 128 KiB output each, and the densest block (RLE) takes 4 bytes (3-byte
// header + the repeated byte).
inline constexpr uint64_t kZstdMaxRatio = (128u << 10) / 4;

class ChunkDecompressor {
 public:
  ChunkDecompressor() = default;
  ChunkDecompressor(const ChunkDecompressor&) = delete;
  ChunkDecompressor& operator=(const ChunkDecompressor&) = delete;

  // Starts a pass over a file of `file_size` bytes: up to 1 GiB + 256 x
  // file_size bytes may be produced (the bound SbtReader puts on decoded
  // rows: far above what a real trace expands to, zstd on top of the
  // columnar encoding).
  void StartPass(uint64_t file_size) {
    budget_ = (uint64_t{1} << 30) + 256 * file_size;
    produced_ = 0;
  }

  // Decompresses `stored` to exactly `raw_len` bytes, valid until the next
  // call on this thread (of any reader's decompressor). DataLoss (the message says why) marks the
  // payload damaged; FailedPrecondition means the pass's budget is spent.
  StatusOr<std::span<const uint8_t>> Decompress(std::span<const uint8_t> stored, uint32_t raw_len);

 private:
  uint64_t budget_ = 0, produced_ = 0;
};

}  // namespace tracesmith::format::internal
