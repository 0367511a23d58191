// RecordStore<Codec>: where a compact trace keeps its GPU ops or its API calls, in one of
// two forms chosen before the first record (#41 item 6; src/timeline/README.md):
//   kArrays  one 32-byte struct per record, lanes sorted at the end (counting sort by lane,
//            WindowedSort within each);
//   kPacked  each lane packed as it arrives (LaneBuilder, in WindowedSort's order), read
//            through PackedLanes: about 7 bytes a record instead of 32.
// Both hand out the same records in the same order (tests/timeline/record_store_test.cc):
// lanes renumbered, each lane in the stable (start, end) order of arrival, then its times put
// on the common clock, the lane sorted again (stable) only where that changed its order.
// Records are read by value (record_view.h), never by reference.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "tracesmith/timeline/compact_records.h"
#include "tracesmith/timeline/lane_builder.h"
#include "tracesmith/timeline/packed_lanes.h"
#include "tracesmith/timeline/sorter.h"

namespace tracesmith::analysis {

enum class RecordForm : uint8_t { kArrays = 0, kPacked = 1 };
inline const char* RecordFormName(RecordForm f) {
  return f == RecordForm::kPacked ? "packed" : "arrays";
}
// "arrays" or "packed" (RecordFormName); nothing for anything else.
inline std::optional<RecordForm> ParseRecordForm(std::string_view name) {
  if (name == "arrays") return RecordForm::kArrays;
  if (name == "packed") return RecordForm::kPacked;
  return std::nullopt;
}
// The environment variable that chooses the form: arrays, packed, or auto (unset: by size,
// LoadCompactTrace).
inline constexpr const char* kRecordFormEnv = "TRACESMITH_RECORDS";

// Half-open [begin, end) range of a lane's records.
struct LaneRange {
  uint32_t begin = 0, end = 0;
};

template <typename Codec>
class RecordStore {
 public:
  using Record = typename Codec::Record;
  using Less = typename Codec::Less;
  using Packed = PackedRecords<Codec::kFields>;

  // Before the first Add.
  void SetForm(RecordForm form) { form_ = form; }
  RecordForm form() const { return form_; }
  void Reserve(size_t n) {
    if (form_ == RecordForm::kArrays) rows_.reserve(n);
  }

  // A record of lane Codec::LaneOf(r), in arrival order.
  void Add(const Record& r) {
    if (form_ == RecordForm::kArrays) {
      rows_.push_back(r);
      return;
    }
    const uint32_t lane = Codec::LaneOf(r);
    if (lane >= builders_.size()) builders_.resize(lane + 1);
    builders_[lane].Add(r);
    ++waiting_;
  }

  // Lanes renumbered (remap[old] = new, a permutation of [0, remap.size())), each lane put
  // in order, then its times converted with map_of(new lane) (a const ClockMap*, null: kept)
  // and the lane sorted again where that changed its order. Returns the lanes WindowedSort
  // could not order within its window (CompactStats::lanes_resorted). Once.
  template <typename MapOf>
  size_t Finish(const std::vector<uint32_t>& remap, const MapOf& map_of) {
    return form_ == RecordForm::kArrays ? FinishArrays(remap, map_of) : FinishPacked(remap, map_of);
  }

  size_t size() const {
    return form_ == RecordForm::kArrays ? rows_.size() : packed_.size() + waiting_;
  }
  bool empty() const { return size() == 0; }
  // After Finish.
  Record operator[](size_t i) const { return form_ == RecordForm::kArrays ? rows_[i] : packed_[i]; }
  // fn(index, record) for every record in order: packed blocks decoded once, not cached.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    if (form_ == RecordForm::kPacked) return packed_.Scan(fn);
    for (size_t i = 0; i < rows_.size(); ++i) fn(i, rows_[i]);
  }
  // Keeps the records keep(index, record) keeps, in order.
  template <typename Keep>
  void Filter(const Keep& keep) {
    if (form_ == RecordForm::kPacked) {
      packed_ = packed_.Filter(keep);
      return;
    }
    size_t k = 0;
    for (size_t i = 0; i < rows_.size(); ++i)
      if (keep(i, rows_[i])) rows_[k++] = rows_[i];
    rows_.resize(k);
  }
  // Sets (*ranges)[lane] to the range of each lane with records (others left as they are).
  void Ranges(std::vector<LaneRange>* ranges) const {
    if (form_ == RecordForm::kPacked) {
      for (size_t k = 0; k < packed_.lanes(); ++k)
        (*ranges)[packed_.lane(k)] = {uint32_t(packed_.lane_begin(k)),
                                      uint32_t(packed_.lane_end(k))};
      return;
    }
    for (size_t i = 0; i < rows_.size();) {
      const uint32_t l = Codec::LaneOf(rows_[i]);
      size_t j = i;
      while (j < rows_.size() && Codec::LaneOf(rows_[j]) == l) ++j;
      (*ranges)[l] = {uint32_t(i), uint32_t(j)};
      i = j;
    }
  }
  // The memory the records hold.
  size_t bytes() const {
    return form_ == RecordForm::kArrays ? rows_.capacity() * sizeof(Record)
                                        : packed_.reserved_bytes();
  }

 private:
  template <typename MapOf>
  size_t FinishArrays(const std::vector<uint32_t>& remap, const MapOf& map_of) {
    for (Record& r : rows_) Codec::SetLane(&r, remap[Codec::LaneOf(r)]);
    SortByLane(remap.size());
    std::vector<LaneRange> ranges(remap.size());
    Ranges(&ranges);
    size_t resorted = 0;
    for (uint32_t l = 0; l < ranges.size(); ++l) {
      const auto b = rows_.begin() + ranges[l].begin, e = rows_.begin() + ranges[l].end;
      resorted += !WindowedSort(b, e, Less());
      const ClockMap* m = map_of(l);
      if (!m) continue;
      bool sorted = true;
      for (auto it = b; it != e; ++it) {
        Codec::Convert(m, &*it);
        sorted = sorted && (it == b || !Less()(*it, *(it - 1)));
      }
      if (!sorted) std::stable_sort(b, e, Less());
    }
    return resorted;
  }

  template <typename MapOf>
  size_t FinishPacked(const std::vector<uint32_t>& remap, const MapOf& map_of) {
    std::vector<uint32_t> old_of(remap.size());
    for (uint32_t old = 0; old < remap.size(); ++old) old_of[remap[old]] = old;
    builders_.resize(remap.size());
    size_t resorted = 0;
    for (uint32_t l = 0; l < remap.size(); ++l) {
      LaneBuilder<Codec, Less>& b = builders_[old_of[l]];
      if (b.size() == 0) continue;
      resorted += b.displaced();
      Packed p = b.Finish();
      b = LaneBuilder<Codec, Less>();
      if (const ClockMap* m = map_of(l)) p = Converted(p, m);
      packed_.AddLane(l, std::move(p));
    }
    std::vector<LaneBuilder<Codec, Less>>().swap(builders_);
    waiting_ = 0;
    return resorted;
  }

  // A lane's records with their times converted, sorted again (stable) if that broke their
  // order.
  static Packed Converted(const Packed& in, const ClockMap* m) {
    Packed out;
    bool sorted = true;
    Record prev{};
    uint64_t columns[Codec::kFields][Packed::kBlock];
    for (size_t b = 0; b < in.blocks(); ++b) {
      const size_t n = in.DecodeColumns(b, columns);
      for (size_t k = 0; k < n; ++k) {
        Record r = PackedLanes<Codec>::DecodeAt(columns, k, 0);
        Codec::Convert(m, &r);
        sorted = sorted && (out.empty() || !Less()(r, prev));
        out.Append(Codec::Encode(r));
        prev = r;
      }
    }
    if (sorted) return out;
    std::vector<Record> all;
    all.reserve(out.size());
    for (size_t i = 0; i < out.size(); ++i) all.push_back(Codec::Decode(out.Get(i), 0));
    std::stable_sort(all.begin(), all.end(), Less());
    Packed again;
    for (const Record& r : all) again.Append(Codec::Encode(r));
    return again;
  }
  // Stable counting sort by lane: O(n), lanes are few. Each row's place, then the rows moved
  // along the permutation's cycles in place: 4 bytes per row instead of a second copy of the
  // rows (320 MB for 10 M ops).
  void SortByLane(size_t lanes) {
    bool sorted = true;
    for (size_t i = 1; i < rows_.size() && sorted; ++i)
      sorted = Codec::LaneOf(rows_[i - 1]) <= Codec::LaneOf(rows_[i]);
    if (sorted) return;
    std::vector<uint32_t> offset(lanes + 1, 0);
    for (const Record& r : rows_) offset[Codec::LaneOf(r) + 1]++;
    std::partial_sum(offset.begin(), offset.end(), offset.begin());
    std::vector<uint32_t> dest(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) dest[i] = offset[Codec::LaneOf(rows_[i])]++;
    for (size_t i = 0; i < rows_.size(); ++i) {
      while (dest[i] != i) {
        const uint32_t j = dest[i];
        std::swap(rows_[i], rows_[j]);
        std::swap(dest[i], dest[j]);
      }
    }
  }

  RecordForm form_ = RecordForm::kArrays;
  std::vector<Record> rows_;                        // kArrays
  std::vector<LaneBuilder<Codec, Less>> builders_;  // kPacked, until Finish: by lane
  PackedLanes<Codec> packed_;                       // kPacked, after Finish
  size_t waiting_ = 0;                              // records in builders_
};

}  // namespace tracesmith::analysis
