// IndexColumn: one 32-bit value per record (the compact trace's issuing call of each GPU op),
// appended in order and read at any index, kept plain (4 bytes a value) or packed with the
// records (PackedRecords<1>: a block of 128 values that lie near each other, as a stream's
// calls do, takes a few bits a value; its size alone was not measured).
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
    if (!packed) plain_.reserve(expected);
  }
  void Append(uint32_t v) {
    if (packed_)
      column_.Append({v});
    else
      plain_.push_back(v);
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
      for (size_t k = 0; k < n; ++k) c.values[k] = uint32_t(values[0][k]);
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
  std::vector<uint32_t> plain_;
  PackedRecords<1> column_;
};

}  // namespace tracesmith::analysis
