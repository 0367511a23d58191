// IndexColumn: one 32-bit value per record (the compact trace's issuing call of each GPU op,
// the op of each API call), appended in order and read at any index, kept plain (4 bytes a
// value) or packed with the records (PackedRecords<1>: a block of 128 values that lie near
// each other, as a stream's calls do, takes a few bits a value). Packed, a value v is
// stored as 2v and UINT32_MAX (none) as 2p + 1, p the value before it: calls that issued
// nothing, among those that did, keep the block narrow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tracesmith/timeline/packed_records.h"

namespace tracesmith::analysis {

class IndexColumn {
 public:
  // Empties the column, to be filled plain or packed.
  void Reset(bool packed, size_t expected) {
    packed_ = packed;
    generation_ = packed::NextGeneration();
    std::vector<uint32_t>().swap(plain_);
    column_.Clear();
    last_ = 0;
    if (!packed) plain_.reserve(expected);
  }
  void Append(uint32_t v) {
    if (!packed_) {
      plain_.push_back(v);
    } else if (v == kNoValue) {
      column_.Append({2 * uint64_t(last_) + 1});
    } else {
      column_.Append({2 * uint64_t(v)});
      last_ = v;
    }
  }
  // Packed: through a per-thread cache of decoded blocks, one slot per block number modulo
  // kCachedBlocks (readers go through a few lanes at once, each in order).
  uint32_t operator[](size_t i) const {
    if (!packed_) return plain_[i];
    const size_t b = i / kBlock;
    Block& c = TheCache()[b % kCachedBlocks];
    if (c.generation != generation_ || c.block != b) {
      uint64_t values[1][kBlock];
      const size_t n = column_.DecodeColumns(b, values);
      for (size_t k = 0; k < n; ++k)
        c.values[k] = values[0][k] & 1 ? kNoValue : uint32_t(values[0][k] >> 1);
      c.generation = generation_;
      c.block = b;
    }
    return c.values[i % kBlock];
  }
  size_t size() const { return packed_ ? column_.size() : plain_.size(); }
  size_t bytes() const {
    return packed_ ? column_.reserved_bytes() : plain_.capacity() * sizeof(uint32_t);
  }

 private:
  static constexpr uint32_t kNoValue = UINT32_MAX;
  static constexpr size_t kBlock = PackedRecords<1>::kBlock;
  static constexpr size_t kCachedBlocks = 16;
  struct Block {
    uint64_t generation = 0;  // 0: empty
    size_t block = 0;
    uint32_t values[kBlock];
  };
  static Block* TheCache() {
    static thread_local Block cache[kCachedBlocks];
    return cache;
  }

  bool packed_ = false;
  uint64_t generation_ = 0;
  uint32_t last_ = 0;  // the last value other than kNoValue appended (packed)
  std::vector<uint32_t> plain_;
  PackedRecords<1> column_;
};

}  // namespace tracesmith::analysis
