// LaneBuilder<Codec, Less>: one lane's records packed as they arrive, in the order
// WindowedSort (sorter.h) gives the whole lane, without ever holding the lane as structs
// (#41 item 6; src/timeline/README.md, "Packed records").
//
// The last kSortWindow + kBlock records or more wait in a ring, sorted by insertion
// (stable); the oldest block of them is packed once kSortWindow + 2 * kBlock wait. A record that
// would move more than kSortWindow places makes the lane `displaced()`: WindowedSort would have
// fallen back to a stable sort of the whole lane there (CompactStats::lanes_resorted counts such
// lanes). Its order is still right while it stays among the waiting records; one that
// belongs before a record already packed makes the lane `unordered()`, and Finish() then
// unpacks the lane, sorts it (stable) and packs it again. Either way the records come out
// in the stable order of `less` over their arrival, as WindowedSort's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tracesmith/timeline/packed_records.h"
#include "tracesmith/timeline/sorter.h"

namespace tracesmith::analysis {

template <typename Codec, typename Less>
class LaneBuilder {
 public:
  using Record = typename Codec::Record;
  using Packed = PackedRecords<Codec::kFields>;
  static constexpr size_t kBlock = Packed::kBlock;

  explicit LaneBuilder(Less less = Less()) : less_(less) {}

  void Add(const Record& r) {
    if (ring_.empty()) ring_.resize(kRing);
    size_t j = count_++;
    if (j > 0 && less_(r, At(j - 1))) {
      size_t moved = 0;
      while (j > 0 && less_(r, At(j - 1))) {
        At(j) = At(j - 1);
        --j;
        ++moved;
      }
      if (j == 0 && has_packed_ && less_(r, last_packed_)) unordered_ = true;
      // Places it moved over, the packed records it belongs before included (their count
      // is not known, but any is past the window: kSortWindow records wait before them).
      if (moved > kSortWindow || (j == 0 && unordered_)) displaced_ = true;
    }
    At(j) = r;
    if (count_ >= kSortWindow + 2 * kBlock) PackOldest(kBlock);
  }
  // Packs what waits (after the lane's last record) and, for an unordered lane, sorts it
  // whole; then returns the lane's records.
  Packed Finish() {
    PackOldest(count_);
    if (!unordered_) return std::move(packed_);
    std::vector<Record> all;
    all.reserve(packed_.size());
    for (size_t i = 0; i < packed_.size(); ++i) all.push_back(Codec::Decode(packed_.Get(i), 0));
    packed_.Clear();
    std::stable_sort(all.begin(), all.end(), less_);
    for (const Record& r : all) packed_.Append(Codec::Encode(r));
    return std::move(packed_);
  }
  size_t size() const { return packed_.size() + count_; }
  bool displaced() const { return displaced_; }
  bool unordered() const { return unordered_; }

 private:
  // The waiting records: a ring of kRing places, the oldest at head_.
  static constexpr size_t kRing = 8192;
  static_assert(kRing >= kSortWindow + 2 * kBlock && (kRing & (kRing - 1)) == 0);
  Record& At(size_t k) { return ring_[(head_ + k) & (kRing - 1)]; }

  void PackOldest(size_t n) {
    for (size_t k = 0; k < n; ++k) {
      packed_.Append(Codec::Encode(At(0)));
      last_packed_ = At(0);
      head_ = (head_ + 1) & (kRing - 1);
      --count_;
    }
    has_packed_ |= n > 0;
    if (count_ == 0) std::vector<Record>().swap(ring_), head_ = 0;  // the lane's end
  }

  Less less_;
  std::vector<Record> ring_;  // allocated at the first record
  size_t head_ = 0, count_ = 0;
  Packed packed_;
  Record last_packed_{};
  bool has_packed_ = false, displaced_ = false, unordered_ = false;
};

}  // namespace tracesmith::analysis
