#include "tracesmith/timeline/index_column.h"

#include <algorithm>
#include <bit>

namespace tracesmith::analysis {

void IndexColumn::Reset(bool packed, size_t expected) {
  packed_ = packed;
  generation_ = packed::NextGeneration();
  std::vector<uint32_t>().swap(plain_);
  std::vector<Bases>().swap(bases_);
  std::vector<std::pair<uint32_t, uint32_t>>().swap(ranges_);
  pages_ = packed::Pages();
  std::vector<Head>().swap(heads_);
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
  // Sorted copy: a column filled in order (a lane's calls, the calls by id) is often sorted
  // already.
  uint32_t sorted[kBlock];
  std::copy(pending_, pending_ + kBlock, sorted);
  const bool in_order = std::is_sorted(sorted, sorted + kBlock);
  if (!in_order) std::sort(sorted, sorted + kBlock);
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
  // Each value's cluster (the last base not above it; values in order: a walk) and offset.
  uint32_t cluster[kBlock], offset[kBlock], widest = 0;
  bool any_none = false;
  size_t c = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const uint32_t v = pending_[i];
    if (!in_order) c = 0;
    while (c + 1 < clusters && bases[c + 1] <= v) ++c;
    cluster[i] = uint32_t(c);
    offset[i] = v - bases[c];
    widest |= offset[i];
    any_none |= none[i];
  }
  Head h;
  h.cluster_bits = uint8_t(std::bit_width(clusters - 1));
  h.offset_bits = uint8_t(std::bit_width(widest));
  h.nones = any_none;
  // kBlock slots of w bits take 2w words.
  h.word = pages_.Take(2 * (h.cluster_bits + h.offset_bits) + (any_none ? 2 : 0));
  uint64_t* out = pages_.At(h.word);
  auto put = [&](const auto& value, uint32_t width) {
    packed::PutSlots(out, width, value);
    out += 2 * width;
  };
  put([&](size_t i) { return cluster[i]; }, h.cluster_bits);
  put([&](size_t i) { return offset[i]; }, h.offset_bits);
  if (any_none) put([&](size_t i) { return uint64_t(none[i]); }, 1);
  heads_.push_back(h);
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
  const Head& h = heads_[b];
  const uint64_t* words = pages_.At(h.word);
  uint64_t cluster[kBlock], offset[kBlock];
  packed::UnpackField(words, {0, h.cluster_bits, 0}, cluster);
  words += 2 * h.cluster_bits;
  packed::UnpackField(words, {0, h.offset_bits, 0}, offset);
  words += 2 * h.offset_bits;
  const Bases& bases = bases_[b];
  for (size_t k = 0; k < kBlock; ++k) c->values[k] = bases[cluster[k]] + uint32_t(offset[k]);
  if (h.nones)
    for (size_t k = 0; k < kBlock; ++k)
      if (words[k / 64] >> (k % 64) & 1) c->values[k] = kNoValue;
  c->generation = generation_;
  c->block = b;
}

}  // namespace tracesmith::analysis
