// LaneBuilder<Codec, Less>: one lane's records packed as they arrive, in the order
// WindowedSort (sorter.h) gives the whole lane, without ever holding the lane as structs
// (#41 item 6; src/timeline/README.md, "Packed records").
//
// The last kSortWindow + kBlock records or more wait, sorted (stable), in two runs: a ring of
// those that came after every record waiting then, and apart, sorted by binary insertion, the
// few that came early (a memcpy row after its batch's kernel rows: moving each one back
// through the ring cost 9% of a 100 M-kernel `analyze`). The oldest block of the two merged
// is packed once kSortWindow + 2 * kBlock wait; at equal times the ring's record comes first
// (one that came early went apart, so every ring record it ties with came before it). A record that
// would move more than kSortWindow places makes the lane `displaced()`: WindowedSort would have
// fallen back to a stable sort of the whole lane there (CompactStats::lanes_resorted counts such
// lanes). Its order is still right while it stays among the waiting records; one that
// belongs before a record already packed makes the lane `unordered()`, and Finish() then
// unpacks the lane, sorts it (stable) and packs it again. Either way the records come out
// in the stable order of `less` over their arrival, as WindowedSort's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
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
    // Into the ring when it comes after every waiting record (ties too, but not a tie with
    // an early one: those came before it).
    if ((in_ring_ == 0 || !less_(r, At(in_ring_ - 1))) &&
        (early_.empty() || less_(early_.back(), r))) {
      At(in_ring_++) = r;
    } else {
      // Moves before the waiting records it is less than: places moved.
      const size_t ring_after = in_ring_ - RingUpperBound(r);
      const auto at = std::upper_bound(early_.begin(), early_.end(), r, less_);
      const size_t moved = ring_after + size_t(early_.end() - at);
      const bool first = moved == in_ring_ + early_.size();
      if (first && has_packed_ && less_(r, last_packed_)) unordered_ = true;
      // Places it moved over, the packed records it belongs before included (their count
      // is not known, but any is past the window: kSortWindow records wait before them).
      if (moved > kSortWindow || (first && unordered_)) displaced_ = true;
      early_.insert(at, r);
    }
    if (in_ring_ + early_.size() >= kSortWindow + 2 * kBlock) PackOldest(kBlock);
  }
  // Packs what waits (after the lane's last record) and, for an unordered lane, sorts it
  // whole; then returns the lane's records.
  Packed Finish() {
    PackOldest(in_ring_ + early_.size());
    if (!unordered_) return std::move(packed_);
    std::vector<Record> all;
    all.reserve(packed_.size());
    for (size_t i = 0; i < packed_.size(); ++i) all.push_back(Codec::Decode(packed_.Get(i), 0));
    packed_.Clear();
    std::stable_sort(all.begin(), all.end(), less_);
    for (const Record& r : all) packed_.Append(Codec::Encode(r));
    return std::move(packed_);
  }
  size_t size() const { return packed_.size() + in_ring_ + early_.size(); }
  bool displaced() const { return displaced_; }
  bool unordered() const { return unordered_; }

 private:
  // The ring: kRing places, the oldest at head_.
  static constexpr size_t kRing = 8192;
  static_assert(kRing >= kSortWindow + 2 * kBlock && (kRing & (kRing - 1)) == 0);
  Record& At(size_t k) { return ring_[(head_ + k) & (kRing - 1)]; }
  // The first ring place whose record r is less than.
  size_t RingUpperBound(const Record& r) {
    size_t lo = 0, hi = in_ring_;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (less_(r, At(mid)))
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }

  void PackOldest(size_t n) {
    for (size_t k = 0; k < n; ++k) {
      const bool early = !early_.empty() && (in_ring_ == 0 || less_(early_.front(), At(0)));
      last_packed_ = early ? early_.front() : At(0);
      packed_.Append(Codec::Encode(last_packed_));
      if (early) {
        early_.pop_front();
      } else {
        head_ = (head_ + 1) & (kRing - 1);
        --in_ring_;
      }
    }
    has_packed_ |= n > 0;
    if (in_ring_ + early_.size() == 0) {  // the lane's end
      std::vector<Record>().swap(ring_), head_ = 0;
      std::deque<Record>().swap(early_);
    }
  }

  Less less_;
  std::vector<Record> ring_;  // allocated at the first record
  size_t head_ = 0, in_ring_ = 0;
  std::deque<Record> early_;  // sorted
  Packed packed_;
  Record last_packed_{};
  bool has_packed_ = false, displaced_ = false, unordered_ = false;
};

}  // namespace tracesmith::analysis
