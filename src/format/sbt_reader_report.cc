// SbtReader::ContentIdentity and ReportFor: what a reader says about the file
// it read, for callers that read a file in several passes (Python's lazy load).
#include <algorithm>
#include <cstring>
#include <set>

#include "tracesmith/format/sbt.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::format {

uint64_t SbtReader::ContentIdentity() const {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64-bit
  auto mix = [&h](const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 1099511628211ull;
    }
  };
  auto mix64 = [&mix](uint64_t v) { mix(reinterpret_cast<const uint8_t*>(&v), sizeof v); };
  mix64(size_);
  mix64(uint64_t(report_.major) << 16 | report_.minor);
  mix64(report_.indexed);
  mix64(chunks_.size());
  for (const ChunkIndexEntry& e : chunks_) {
    for (uint64_t v :
         {e.offset, uint64_t(e.type), uint64_t(e.table_kind), e.rows, e.min_ts, e.max_ts})
      mix64(v);
    const uint64_t n =
        e.offset < size_ ? std::min<uint64_t>(kChunkHeaderSize, size_ - e.offset) : 0;
    mix64(n);
    mix(data_ + e.offset, n);
  }
  return h;
}

ReadReport SbtReader::ReportFor(const std::function<bool(const ChunkIndexEntry*)>& mine) const {
  ReadReport out = report_;
  out.damage.clear();
  std::set<uint64_t> unlisted;  // chunks whose indexed events were given back
  // Where chunk `it - 1` ends: at the next chunk, the last one where its
  // header says (the index and trailer follow it), within the file.
  auto end_of = [&](std::vector<ChunkIndexEntry>::const_iterator it) -> uint64_t {
    if (it != chunks_.end()) return it->offset;
    const uint64_t at = std::prev(it)->offset;
    if (at + kChunkHeaderSize > size_) return size_;
    uint32_t stored_len = 0;  // the header's third field (magic u32, type u16, flags u16)
    std::memcpy(&stored_len, data_ + at + 8, 4);
    return std::min<uint64_t>(size_, at + kChunkHeaderSize + stored_len);
  };
  for (const Damage& d : report_.damage) {
    // The chunk holding the damage: the last one starting at or before it.
    auto it = std::upper_bound(
        chunks_.begin(), chunks_.end(), d.offset,
        [](uint64_t offset, const ChunkIndexEntry& e) { return offset < e.offset; });
    const ChunkIndexEntry* chunk = nullptr;
    if (it != chunks_.begin() && d.offset < end_of(it)) chunk = &*std::prev(it);
    if (mine(chunk)) {
      out.damage.push_back(d);
      continue;
    }
    if (chunk && d.offset == chunk->offset) {  // the whole chunk was counted lost
      out.valid_bytes += end_of(it) - chunk->offset;
      if (out.indexed && unlisted.insert(chunk->offset).second)
        out.events_lost -= std::min(out.events_lost, chunk->rows);
    } else {
      out.valid_bytes += d.length;
    }
  }
  return out;
}

}  // namespace tracesmith::format
