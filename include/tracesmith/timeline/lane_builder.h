// LaneBuilder<Codec, Less>: one lane's records packed as they arrive, in the order
// WindowedSort (sorter.h) gives the whole lane, without ever holding the lane as structs
// (#41 item 6; src/timeline/README.md, "Packed records").
//
// The last kSortWindow + 2 * kBlock records or more wait, sorted (stable), in two runs: a ring
// of those that came after every record waiting then, and apart, sorted by binary insertion,
// the few that came early (a memcpy row after its batch's kernel rows: moving each one back
// through the ring cost 9% of a 100 M-kernel `analyze`). The oldest block of the two merged
// is packed once enough wait; at equal times the ring's record comes first (one that came
// early went apart, so every ring record it ties with came before it). A record that would
// move more than kSortWindow places makes the lane `displaced()`: WindowedSort would have
// fallen back to a stable sort of the whole lane there (CompactStats::lanes_resorted counts
// such lanes). One that belongs before records already packed takes them back to wait again
// when at most 2^18 records then wait, and more wait from then on (a file's later table
// comes that far behind); past that the lane is `unordered()`: such records wait apart,
// packed, and Finish() merges them in (sorted, stable), in one pass over the lane. Either
// way the records come out in the stable order of `less` over their arrival, as
// WindowedSort's.
#pragma once

#include <algorithm>
#include <array>
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
      if (in_ring_ == ring_.size()) Grow(in_ring_ + 1);
      At(in_ring_++) = r;
    } else {
      if (!packed_.empty() && less_(r, last_packed_)) {
        // Belongs before records already packed: they are taken back to wait again when
        // that keeps at most kMaxHold records waiting (and from then on more wait before
        // the oldest are packed: a file's later table comes that far behind); else it
        // waits apart with the other late ones, merged in at Finish.
        const size_t after = packed_.size() - PackedUpperBound(r);
        if (late_.empty() && in_ring_ + early_.size() + after + kBlock <= kMaxHold) {
          TakeBack(after);
        } else {
          displaced_ = true;  // past the window: more than kSortWindow wait
          late_.Append(Codec::Encode(r));
          return;
        }
      }
      // Moves before the waiting records it is less than: places moved.
      const size_t ring_after = in_ring_ - RingUpperBound(r);
      const auto at = std::upper_bound(early_.begin(), early_.end(), r, less_);
      const size_t moved = ring_after + size_t(early_.end() - at);
      if (moved > kSortWindow) displaced_ = true;
      early_.insert(at, r);
    }
    if (in_ring_ + early_.size() >= hold_) PackOldest(kBlock);
  }
  // Packs what waits (after the lane's last record); then merges in the late records, sorted
  // (stable), a packed record first at equal times (it came first: a late record is less
  // than every record packed when it came); returns the lane's records.
  Packed Finish() {
    PackOldest(in_ring_ + early_.size());
    if (late_.empty()) return std::move(packed_);
    std::vector<Record> late;
    late.reserve(late_.size());
    for (size_t i = 0; i < late_.size(); ++i) late.push_back(Codec::Decode(late_.Get(i), 0));
    late_.Clear();
    std::stable_sort(late.begin(), late.end(), less_);
    Packed out;
    size_t k = 0;
    uint64_t columns[Codec::kFields][kBlock];
    for (size_t b = 0; b < packed_.blocks(); ++b) {
      const size_t n = packed_.DecodeColumns(b, columns);
      for (size_t i = 0; i < n; ++i) {
        const auto f = Packed::RowAt(columns, i);
        const Record r = Codec::Decode(f, 0);
        for (; k < late.size() && less_(late[k], r); ++k) out.Append(Codec::Encode(late[k]));
        out.Append(f);
      }
    }
    for (; k < late.size(); ++k) out.Append(Codec::Encode(late[k]));
    packed_.Clear();
    return out;
  }
  size_t size() const { return packed_.size() + late_.size() + in_ring_ + early_.size(); }
  bool displaced() const { return displaced_; }
  bool unordered() const { return !late_.empty(); }  // before Finish

 private:
  // The ring: a power of two of places (kRing at first), the oldest at head_.
  static constexpr size_t kRing = 8192;
  static_assert(kRing >= kSortWindow + 2 * kBlock && (kRing & (kRing - 1)) == 0);
  // Records waiting at most after packed ones are taken back (32 B each: 8 MB a lane).
  static constexpr size_t kMaxHold = size_t(1) << 18;
  Record& At(size_t k) { return ring_[(head_ + k) & (ring_.size() - 1)]; }
  // Room for `n` records in the ring, the waiting ones kept in order from place 0.
  void Grow(size_t n) {
    size_t cap = ring_.size();
    while (cap < n) cap *= 2;
    if (cap == ring_.size()) return;
    std::vector<Record> ring(cap);
    for (size_t k = 0; k < in_ring_; ++k) ring[k] = At(k);
    ring_.swap(ring);
    head_ = 0;
  }
  // Takes the last `n` packed records or more (whole blocks) back to the front of the ring,
  // then holds twice as many as wait before packing.
  void TakeBack(size_t n) {
    std::vector<std::array<uint64_t, Codec::kFields>> back;
    packed_.PopTail(n, &back);
    Grow(in_ring_ + back.size());
    head_ = (head_ - back.size()) & (ring_.size() - 1);
    in_ring_ += back.size();
    for (size_t k = 0; k < back.size(); ++k) At(k) = Codec::Decode(back[k], 0);
    if (!packed_.empty()) last_packed_ = Codec::Decode(packed_.Get(packed_.size() - 1), 0);
    hold_ = std::max(hold_, std::min(kMaxHold, 2 * (in_ring_ + early_.size())));
  }
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
  // The first packed record that r is less than (packed records are in order).
  size_t PackedUpperBound(const Record& r) const {
    size_t lo = 0, hi = packed_.size();
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (less_(r, Codec::Decode(packed_.Get(mid), 0)))
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
        head_ = (head_ + 1) & (ring_.size() - 1);
        --in_ring_;
      }
    }
    if (in_ring_ + early_.size() == 0) {  // the lane's end
      std::vector<Record>().swap(ring_), head_ = 0, hold_ = kSortWindow + 2 * kBlock;
      std::deque<Record>().swap(early_);
    }
  }

  Less less_;
  std::vector<Record> ring_;  // allocated at the first record
  size_t head_ = 0, in_ring_ = 0;
  size_t hold_ = kSortWindow + 2 * kBlock;  // records waiting before the oldest block is packed
  std::deque<Record> early_;                // sorted
  Packed packed_;
  Packed late_;  // records that came after records they belong before were packed
  Record last_packed_{};
  bool displaced_ = false;
};

}  // namespace tracesmith::analysis
