#include "tracesmith/timeline/index_column.h"

#include <algorithm>

namespace tracesmith::analysis {

void IndexColumn::Reset(bool packed, size_t expected) {
  packed_ = packed;
  generation_ = packed::NextGeneration();
  std::vector<uint32_t>().swap(plain_);
  std::vector<Bases>().swap(bases_);
  std::vector<std::pair<uint32_t, uint32_t>>().swap(ranges_);
  column_.Clear();
  size_ = 0;
  last_ = 0;
  if (!packed) plain_.reserve(expected);
}

void IndexColumn::PackPending() {
  // A none as the value before it; the distinct values, cut at the kClusters - 1 largest
  // gaps between neighbours.
  bool none[kBlock];
  for (size_t i = 0; i < kBlock; ++i) {
    none[i] = pending_[i] == kNoValue;
    if (none[i])
      pending_[i] = last_;
    else
      last_ = pending_[i];
  }
  uint32_t sorted[kBlock];
  std::copy(pending_, pending_ + kBlock, sorted);
  std::sort(sorted, sorted + kBlock);
  const size_t distinct = size_t(std::unique(sorted, sorted + kBlock) - sorted);
  Bases bases;
  bases.fill(UINT32_MAX);
  size_t clusters = 0;
  if (distinct <= kClusters) {
    for (size_t k = 0; k < distinct; ++k) bases[clusters++] = sorted[k];
  } else {
    uint32_t cut[kBlock - 1];  // cut[k]: the gap after sorted[k]
    for (size_t k = 0; k + 1 < distinct; ++k) cut[k] = uint32_t(k);
    std::nth_element(cut, cut + (kClusters - 2), cut + distinct - 1, [&](uint32_t a, uint32_t b) {
      const uint32_t ga = sorted[a + 1] - sorted[a], gb = sorted[b + 1] - sorted[b];
      return ga != gb ? ga > gb : a < b;
    });
    std::sort(cut, cut + (kClusters - 1));
    bases[clusters++] = sorted[0];
    for (size_t k = 0; k + 1 < kClusters; ++k) bases[clusters++] = sorted[cut[k] + 1];
  }
  for (size_t i = 0; i < kBlock; ++i) {
    const uint32_t v = pending_[i];
    const size_t c =
        size_t(std::upper_bound(bases.begin(), bases.begin() + clusters, v) - bases.begin()) - 1;
    column_.Append({uint64_t(c), uint64_t(v - bases[c]), uint64_t(none[i])});
  }
  bases_.push_back(bases);
  ranges_.push_back({sorted[0], sorted[distinct - 1]});
}

const IndexColumn::Block& IndexColumn::Find(Cache& c, size_t b) const {
  for (uint32_t k = 0; k < kCachedBlocks; ++k)
    if (c.blocks[k].generation == generation_ && c.blocks[k].block == b) {
      c.last = k;
      return c.blocks[k];
    }
  c.last = c.next;
  c.next = (c.next + 1) % kCachedBlocks;
  Decode(b, &c.blocks[c.last]);
  return c.blocks[c.last];
}

void IndexColumn::Decode(size_t b, Block* c) const {
  uint64_t columns[3][kBlock];
  column_.DecodeColumns(b, columns);
  const Bases& bases = bases_[b];
  for (size_t k = 0; k < kBlock; ++k)
    c->values[k] = columns[2][k] ? kNoValue : bases[columns[0][k]] + uint32_t(columns[1][k]);
  c->generation = generation_;
  c->block = b;
}

}  // namespace tracesmith::analysis
