// LaneBuilder<Codec, Less>: one lane's records packed as they arrive, in the order
// WindowedSort (sorter.h) gives the whole lane, without ever holding the lane as structs
// (#41 item 6; src/timeline/README.md, "Packed records").
//
// The last kSortWindow + kBlock records wait, sorted by insertion (stable); the oldest block
// of them is packed once more than kSortWindow wait behind it. A record that would move
// more than kSortWindow places makes the lane `displaced()`: WindowedSort would have fallen
// back to a stable sort of the whole lane there (CompactStats::lanes_resorted counts such
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
    waiting_.push_back(r);
    size_t j = waiting_.size() - 1, moved = 0;
    while (j > 0 && less_(r, waiting_[j - 1])) {
      waiting_[j] = waiting_[j - 1];
      --j;
      ++moved;
    }
    waiting_[j] = r;
    if (j == 0 && has_packed_ && less_(r, last_packed_)) unordered_ = true;
    // Places it moved over, the packed records it belongs before included (their count is
    // not known, but any is past the window: kSortWindow records wait before them).
    if (moved > kSortWindow || (j == 0 && unordered_)) displaced_ = true;
    if (waiting_.size() >= kSortWindow + 2 * kBlock) PackOldest(kBlock);
  }
  // Packs what waits (after the lane's last record) and, for an unordered lane, sorts it
  // whole; then returns the lane's records.
  Packed Finish() {
    PackOldest(waiting_.size());
    if (!unordered_) return std::move(packed_);
    std::vector<Record> all;
    all.reserve(packed_.size());
    for (size_t i = 0; i < packed_.size(); ++i) all.push_back(Codec::Decode(packed_.Get(i), 0));
    packed_.Clear();
    std::stable_sort(all.begin(), all.end(), less_);
    for (const Record& r : all) packed_.Append(Codec::Encode(r));
    return std::move(packed_);
  }
  size_t size() const { return packed_.size() + waiting_.size(); }
  bool displaced() const { return displaced_; }
  bool unordered() const { return unordered_; }

 private:
  void PackOldest(size_t n) {
    for (size_t k = 0; k < n; ++k) {
      packed_.Append(Codec::Encode(waiting_.front()));
      last_packed_ = waiting_.front();
      waiting_.pop_front();
    }
    has_packed_ |= n > 0;
  }

  Less less_;
  std::deque<Record> waiting_;
  Packed packed_;
  Record last_packed_{};
  bool has_packed_ = false, displaced_ = false, unordered_ = false;
};

}  // namespace tracesmith::analysis
