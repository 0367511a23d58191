#include "chunk_decompressor.h"

#include <zstd.h>

#include "tracesmith/format/sbt.h"

namespace tracesmith::format::internal {

ChunkDecompressor::ChunkDecompressor() : ctx_(ZSTD_createDCtx()) {}

ChunkDecompressor::~ChunkDecompressor() { ZSTD_freeDCtx(ctx_); }

StatusOr<std::span<const uint8_t>> ChunkDecompressor::Decompress(std::span<const uint8_t> stored,
                                                                 uint32_t raw_len) {
  if (raw_len > kMaxChunkRawBytes)
    return DataLoss(
        StrFormat("decompressed size %u exceeds the %u-byte limit", raw_len, kMaxChunkRawBytes));
  if (raw_len > stored.size() * kZstdMaxRatio)
    return DataLoss(
        StrFormat("declares %u decompressed bytes from %zu stored: more than zstd "
                  "expands (at most %llu x)",
                  raw_len, stored.size(), static_cast<unsigned long long>(kZstdMaxRatio)));
  const unsigned long long framed = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (framed == ZSTD_CONTENTSIZE_ERROR) return DataLoss("payload is not a zstd frame");
  if (framed != ZSTD_CONTENTSIZE_UNKNOWN && framed != raw_len)
    return DataLoss(
        StrFormat("zstd frame declares %llu bytes, the chunk header %u", framed, raw_len));
  if (raw_len > budget_ - produced_)  // produced_ <= budget_
    return FailedPrecondition(
        StrFormat("decompressing would exceed the %llu-byte limit on zstd output per read of the "
                  "file (1 GiB + 256 x file size)",
                  static_cast<unsigned long long>(budget_)));
  produced_ += raw_len;  // charged before the work: failures cost the same
  if (ctx_ == nullptr) return FailedPrecondition("zstd: cannot allocate a decompression context");
  if (raw_len > capacity_) {
    buffer_ = std::make_unique_for_overwrite<uint8_t[]>(raw_len);  // not zeroed
    capacity_ = raw_len;
  }
  const size_t got =
      ZSTD_decompressDCtx(ctx_, buffer_.get(), raw_len, stored.data(), stored.size());
  if (ZSTD_isError(got)) return DataLoss(StrFormat("zstd: %s", ZSTD_getErrorName(got)));
  if (got != raw_len)
    return DataLoss(
        StrFormat("zstd payload decompresses to %zu bytes, not the declared %u", got, raw_len));
  return std::span<const uint8_t>(buffer_.get(), raw_len);
}

}  // namespace tracesmith::format::internal
