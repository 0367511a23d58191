// PackedLanes<Codec>: a compact trace's GPU ops or API calls, one PackedRecords per lane,
// lanes one after the other, read by a global index through a small decoded-block cache.
// The storage RecordView is to read from once the compact trace keeps its records packed
// (#41 item 6; src/timeline/README.md, "Packed records").
//
// A lane's number is not stored in its records: the lane store knows it, and puts it back
// when it decodes them. Reading: each thread keeps the last kCachedBlocks blocks it decoded
// (of any PackedLanes of this record type); a read in a cached block costs a comparison and
// a copy. A miss finds the lane (binary search over the lanes' first indexes); when it
// continues a cached block or lies near one of the last few lone reads, it decodes the
// block's 128 records at once (analyses read lanes in order, or a few lanes at once: a
// merge by time), else only the record read (a read at random).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tracesmith/timeline/packed_records.h"

namespace tracesmith::analysis {

// Codec: `using Record`, `static constexpr size_t kFields`, and
//   static std::array<uint64_t, kFields> Encode(const Record&);
//   static Record Decode(const std::array<uint64_t, kFields>&, uint32_t lane);
// (compact_records.h: OpCodec, CallCodec).
template <typename Codec>
class PackedLanes {
 public:
  using Record = typename Codec::Record;
  using Packed = PackedRecords<Codec::kFields>;
  static constexpr size_t kBlock = Packed::kBlock;
  static constexpr size_t kCachedBlocks = 32;  // a power of two

  PackedLanes() : generation_(packed::NextGeneration()) {}
  PackedLanes(PackedLanes&& o) noexcept
      : lanes_(std::move(o.lanes_)), size_(o.size_), generation_(packed::NextGeneration()) {
    o.size_ = 0;
    o.generation_ = packed::NextGeneration();
  }
  PackedLanes& operator=(PackedLanes&& o) noexcept {
    lanes_ = std::move(o.lanes_);
    size_ = o.size_;
    generation_ = packed::NextGeneration();
    o.size_ = 0;
    o.generation_ = packed::NextGeneration();
    return *this;
  }

  // Appends lane `lane`'s records (after every lane added before).
  void AddLane(uint32_t lane, Packed records) {
    const size_t n = records.size();
    lanes_.push_back({size_, lane, 0, n, std::make_shared<const Packed>(std::move(records))});
    size_ += n;
    generation_ = packed::NextGeneration();  // blocks cached before name other records
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The lanes in order: each one's number, and its records' global indexes.
  size_t lanes() const { return lanes_.size(); }
  uint32_t lane(size_t k) const { return lanes_[k].lane; }
  size_t lane_begin(size_t k) const { return lanes_[k].begin; }
  size_t lane_end(size_t k) const { return lanes_[k].begin + lanes_[k].count; }

  // The records keep(index, record) keeps, each lane's in order. A lane whose kept records
  // are one run (a time window's) shares its packed records with this store, the run
  // marked; another lane's kept records are packed again.
  template <typename Keep>
  PackedLanes Filter(const Keep& keep) const {
    PackedLanes out;
    std::vector<uint8_t> kept;
    size_t lane = 0;
    for (const LaneStore& l : lanes_) {
      kept.assign(l.count, 0);
      size_t first = l.count, last = 0, n = 0;
      ScanLane(lane++, [&](size_t i, const Record& r) {
        if (!keep(i, r)) return;
        const size_t k = i - l.begin;
        kept[k] = 1;
        first = std::min(first, k), last = k, ++n;
      });
      if (n == 0 || last - first + 1 == n) {
        out.lanes_.push_back({out.size_, l.lane, l.first + (n ? first : 0), n, l.records});
      } else {
        Packed packed;
        for (size_t k = 0; k < l.count; ++k)
          if (kept[k]) packed.Append(l.records->Get(l.first + k));
        out.lanes_.push_back(
            {out.size_, l.lane, 0, n, std::make_shared<const Packed>(std::move(packed))});
      }
      out.size_ += n;
    }
    return out;
  }

  // Bytes the records take (PackedRecords::bytes; records shared by a filtered store's
  // lanes counted once per lane) and the memory held.
  size_t bytes() const {
    size_t b = 0;
    for (const LaneStore& l : lanes_) b += l.records->bytes();
    return b;
  }
  size_t reserved_bytes() const {
    size_t b = lanes_.capacity() * sizeof(LaneStore);
    for (const LaneStore& l : lanes_) b += l.records->reserved_bytes();
    return b;
  }

  // fn(index, record) for every record in order, each block decoded once (the cache
  // untouched).
  template <typename Fn>
  void Scan(const Fn& fn) const {
    for (size_t k = 0; k < lanes_.size(); ++k) ScanLane(k, fn);
  }
  // Scan of the k-th lane alone.
  template <typename Fn>
  void ScanLane(size_t k, const Fn& fn) const {
    uint64_t columns[Codec::kFields][kBlock];
    const LaneStore& l = lanes_[k];
    const size_t end = l.first + l.count;
    for (size_t b = l.first / kBlock; b * kBlock < end; ++b) {
      const size_t n = l.records->DecodeColumns(b, columns);
      const size_t from = std::max(b * kBlock, l.first), to = std::min(b * kBlock + n, end);
      for (size_t i = from; i < to; ++i)
        fn(l.begin + (i - l.first), DecodeAt(columns, i - b * kBlock, l.lane));
    }
  }
  // Record k of a block decoded into columns (PackedRecords::DecodeColumns).
  static Record DecodeAt(const uint64_t (*columns)[kBlock], size_t k, uint32_t lane) {
    return Codec::Decode(Packed::RowAt(columns, k), lane);
  }

  Record operator[](size_t i) const {
    Cache& c = TheCache();
    const Block& last = c.blocks[c.last];
    if (last.generation == generation_ && i - last.lo < last.hi - last.lo)
      return last.rows[i - last.lo + last.row];
    // Newest first: a merge of a few lanes by time reads the blocks it decoded last.
    for (uint32_t k = 1; k <= kCachedBlocks; ++k) {
      const uint32_t slot = (c.next - k) & (kCachedBlocks - 1);
      const Block& b = c.blocks[slot];
      if (b.generation == generation_ && i - b.lo < b.hi - b.lo) {
        c.last = slot;
        return b.rows[i - b.lo + b.row];
      }
    }
    return Load(c, i);
  }

 private:
  // A lane: records [first, first + count) of its packed records, at global indexes
  // [begin, begin + count). Packed records are shared by the stores filtered from one.
  struct LaneStore {
    size_t begin = 0;
    uint32_t lane = 0;
    size_t first = 0, count = 0;
    std::shared_ptr<const Packed> records;
  };
  // A decoded block: global indexes [lo, hi) are rows [row, row + hi - lo).
  struct Block {
    uint64_t generation = 0;  // 0: empty
    size_t lo = 0, hi = 0, row = 0;
    Record rows[kBlock];
  };
  static constexpr size_t kProbes = 4;
  struct Cache {
    Block blocks[kCachedBlocks];
    uint32_t last = 0, next = 0;
    // The last lone reads (records decoded alone), and the store they were of.
    uint64_t probe_generation[kProbes] = {};
    size_t probe[kProbes] = {};
    uint32_t next_probe = 0;
  };
  static bool Near(size_t i, size_t begin, size_t end) {
    return i < begin ? begin - i <= kBlock : i - end < kBlock;
  }
  static Cache& TheCache() {
    static thread_local Cache cache;
    return cache;
  }
  Record Load(Cache& c, size_t i) const {
    auto it = std::upper_bound(lanes_.begin(), lanes_.end(), i,
                               [](size_t x, const LaneStore& l) { return x < l.begin; });
    const LaneStore& l = *(it - 1);
    bool near = false;
    for (const Block& b : c.blocks) near |= b.generation == generation_ && Near(i, b.lo, b.hi);
    for (size_t k = 0; k < kProbes; ++k)
      near |= c.probe_generation[k] == generation_ && Near(i, c.probe[k], c.probe[k] + 1);
    if (!near) {
      c.probe_generation[c.next_probe] = generation_;
      c.probe[c.next_probe] = i;
      c.next_probe = (c.next_probe + 1) % kProbes;
      return Codec::Decode(l.records->Get(l.first + (i - l.begin)), l.lane);
    }
    const size_t local = l.first + (i - l.begin), block = local / kBlock;
    uint64_t columns[Codec::kFields][kBlock];
    const size_t n = l.records->DecodeColumns(block, columns);
    Block& b = c.blocks[c.next];
    c.last = c.next;
    c.next = (c.next + 1) % kCachedBlocks;
    // The block's records that are the lane's: local [from, to).
    const size_t from = std::max(block * kBlock, l.first);
    const size_t to = std::min(block * kBlock + n, l.first + l.count);
    b.generation = generation_;
    b.lo = l.begin + (from - l.first);
    b.hi = l.begin + (to - l.first);
    b.row = from - block * kBlock;
    for (size_t k = 0; k < n; ++k) b.rows[k] = DecodeAt(columns, k, l.lane);
    return b.rows[i - b.lo + b.row];
  }

  std::vector<LaneStore> lanes_;
  size_t size_ = 0;
  uint64_t generation_;
};

}  // namespace tracesmith::analysis
