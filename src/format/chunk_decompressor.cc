#include "chunk_decompressor.h"

#include <zstd.h>

#include <memory>

#include "tracesmith/format/sbt.h"

namespace tracesmith::format::internal {

namespace {

// The zstd context and output buffer of this thread's decompressions.
struct ThreadZstd {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  std::unique_ptr<uint8_t[]> buffer;
  uint64_t capacity = 0;
  ~ThreadZstd() { ZSTD_freeDCtx(ctx); }
};

}  // namespace

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
  static thread_local ThreadZstd z;
  if (z.ctx == nullptr) return FailedPrecondition("zstd: cannot allocate a decompression context");
  if (raw_len > z.capacity) {
    z.buffer = std::make_unique_for_overwrite<uint8_t[]>(raw_len);  // not zeroed
    z.capacity = raw_len;
  }
  const size_t got =
      ZSTD_decompressDCtx(z.ctx, z.buffer.get(), raw_len, stored.data(), stored.size());
  if (ZSTD_isError(got)) return DataLoss(StrFormat("zstd: %s", ZSTD_getErrorName(got)));
  if (got != raw_len)
    return DataLoss(
        StrFormat("zstd payload decompresses to %zu bytes, not the declared %u", got, raw_len));
  return std::span<const uint8_t>(z.buffer.get(), raw_len);
}

}  // namespace tracesmith::format::internal
