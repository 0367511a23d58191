// IndexColumn: one 32-bit value per record (the compact trace's issuing call of each GPU op,
// the op of each API call), appended in order and read at any index, kept plain (4 bytes a
// value) or packed with the records.
//
// Packed, each full block of 128 values is cut into at most kClusters clusters of nearby
// values (at the largest gaps between them), and a value is stored as its cluster's number
// and its offset from the cluster's first value, each in as many bits as the block's widest
// needs (frame of reference, no exceptions: an outlier is a cluster of its own), the clusters'
// first values beside. Calls issued to 8 streams point at 8 runs of ops far apart,
// each advancing slowly: 8 clusters, narrow offsets, where one frame of reference would take
// 27 bits a value at 100 M ops. A value that is UINT32_MAX (none) is stored as the value
// before it, marked (the third field: no bits in a block without one).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tracesmith/timeline/packed_records.h"

namespace tracesmith::analysis {

class IndexColumn {
 public:
  // Empties the column, to be filled plain or packed.
  void Reset(bool packed, size_t expected);
  // Plain, holding `values`.
  void Adopt(std::vector<uint32_t> values) {
    Reset(false, 0);
    plain_ = std::move(values);
  }
  void Append(uint32_t v) {
    if (!packed_) {
      plain_.push_back(v);
      return;
    }
    pending_[size_ % kBlock] = v;
    if (++size_ % kBlock == 0) PackPending();
  }
  // Packed: through a per-thread cache of the last kCachedBlocks blocks decoded (of any
  // column), the one read last tried first (readers go through a few lanes at once, each in
  // order, and often two columns together: a direct-mapped cache thrashed there).
  uint32_t operator[](size_t i) const {
    if (!packed_) return plain_[i];
    const size_t b = i / kBlock;
    if (b == bases_.size()) return pending_[i % kBlock];  // the unfilled block
    Cache& c = TheCache();
    const Block& last = c.blocks[c.last];
    if (last.generation == generation_ && last.block == b) return last.values[i % kBlock];
    return Find(c, b).values[i % kBlock];
  }
  size_t size() const { return packed_ ? size_ : plain_.size(); }
  // Values [128 b, 128 b + 128) lie in [first, second] (none aside), for the full blocks of a
  // packed column (a scan for some values skips the others); {0, UINT32_MAX} else.
  static constexpr size_t kBlock = packed::kBlock;
  std::pair<uint32_t, uint32_t> BlockRange(size_t b) const {
    if (!packed_ || b >= ranges_.size()) return {0, UINT32_MAX};
    return ranges_[b];
  }
  size_t bytes() const {
    return packed_ ? pages_.bytes + heads_.capacity() * sizeof(Head) +
                         bases_.capacity() * sizeof(Bases) +
                         ranges_.capacity() * sizeof(ranges_[0]) + sizeof(pending_)
                   : plain_.capacity() * sizeof(uint32_t);
  }

 private:
  static constexpr uint32_t kNoValue = UINT32_MAX;
  static constexpr size_t kClusters = 8;
  static constexpr size_t kCachedBlocks = 16;
  using Bases = std::array<uint32_t, kClusters>;
  struct Block {
    uint64_t generation = 0;  // 0: empty
    size_t block = 0;
    uint32_t values[kBlock];
  };
  struct Cache {
    Block blocks[kCachedBlocks];
    uint32_t last = 0, next = 0;
  };
  static Cache& TheCache() {
    static thread_local Cache cache;
    return cache;
  }
  // Block b from the cache, decoded into it if not there (the oldest replaced).
  const Block& Find(Cache& c, size_t b) const;
  void PackPending();
  void Decode(size_t b, Block* c) const;

  bool packed_ = false;
  uint64_t generation_ = 0;
  std::vector<uint32_t> plain_;
  size_t size_ = 0;
  // Per full block: where its words start, and the widths of its clusters' numbers and of its
  // offsets; its nones' bits (kBlock of them) after those when it has any.
  struct Head {
    uint32_t word = 0;
    uint8_t cluster_bits = 0, offset_bits = 0, nones = 0;
  };
  packed::Pages pages_;
  std::vector<Head> heads_;
  std::vector<Bases> bases_;                           // per full block
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;  // per full block: BlockRange
  uint32_t pending_[kBlock] = {};
  uint32_t last_ = 0;  // the last value appended other than none
};

}  // namespace tracesmith::analysis
