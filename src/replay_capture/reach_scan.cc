#include "reach_scan.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace tracesmith::replay_capture {

namespace {
// Words probed with the driver: at least 4 GiB (device allocations sit above
// it on 64-bit Linux; small integers and indices sit below) and below 2^57
// (no user-space address is larger; most float/bf16 bit patterns are).
constexpr uint64_t kMinProbed = 1ull << 32, kMaxProbed = 1ull << 57;
// Words are looked at only inside the 1 TiB windows that hold a known or
// snapshotted allocation (the driver places a process's device memory
// together): two packed int32 indices or most float pairs fall outside them
// and cost one comparison per window.
constexpr int kWindowShift = 40;
// Distinct unresolved words remembered (the count stops there).
constexpr size_t kMaxUnresolved = 1u << 16;

bool ByAddress(const MemRange& a, const MemRange& b) { return a.address < b.address; }

// Inserts `r` into a sorted vector.
void InsertSorted(std::vector<MemRange>& v, const MemRange& r) {
  v.insert(std::upper_bound(v.begin(), v.end(), r, ByAddress), r);
}
}  // namespace

ReachScanner::ReachScanner(std::vector<MemRange> known, Probe probe, ReachLimits limits)
    : known_(std::move(known)), probe_(std::move(probe)), limits_(limits) {
  std::erase_if(known_, [](const MemRange& r) { return r.size == 0; });
  std::sort(known_.begin(), known_.end(), ByAddress);
  known_.erase(
      std::unique(known_.begin(), known_.end(),
                  [](const MemRange& a, const MemRange& b) { return a.address == b.address; }),
      known_.end());
  for (const MemRange& r : known_) AddWindow(r);
}

void ReachScanner::AddWindow(const MemRange& r) {
  for (uint64_t w = r.address >> kWindowShift; w <= (r.end() - 1) >> kWindowShift; ++w)
    if (std::find(windows_.begin(), windows_.end(), w) == windows_.end()) windows_.push_back(w);
}

bool ReachScanner::InWindow(uint64_t v) const {
  const uint64_t w = v >> kWindowShift;
  for (uint64_t x : windows_)
    if (x == w) return true;
  return false;
}

void ReachScanner::AddRoot(const MemRange& r) {
  if (r.size && !Taken(r.address)) {
    InsertSorted(taken_, r);
    AddWindow(r);
  }
}

const MemRange* ReachScanner::FindKnown(uint64_t address) {
  if (known_.empty()) return nullptr;
  if (last_hit_ < known_.size() && known_[last_hit_].Contains(address)) return &known_[last_hit_];
  auto it = std::upper_bound(known_.begin(), known_.end(), MemRange{address, 0}, ByAddress);
  if (it == known_.begin()) return nullptr;
  --it;
  if (!it->Contains(address)) return nullptr;
  last_hit_ = size_t(it - known_.begin());
  return &*it;
}

// True when the allocation at `base` overlaps a snapshotted range (so that
// snapshots never overlap: the replay refuses overlapping ranges).
bool ReachScanner::Taken(uint64_t base) const {
  auto it = std::upper_bound(taken_.begin(), taken_.end(), MemRange{base, 0}, ByAddress);
  if (it != taken_.begin() && std::prev(it)->end() > base) return true;
  return false;
}

std::vector<ReachedAllocation> ReachScanner::Scan(const MemRange& at,
                                                  std::span<const uint8_t> image, uint32_t depth) {
  std::unordered_map<uint64_t, ReachedAllocation> hits;  // by allocation address
  auto overlaps_taken = [&](const MemRange& r) {
    if (Taken(r.address)) return true;
    auto it = std::upper_bound(taken_.begin(), taken_.end(), MemRange{r.address, 0}, ByAddress);
    return it != taken_.end() && it->address < r.end();
  };
  const size_t words = image.size() / 8;
  for (size_t k = 0; k < words; ++k) {
    uint64_t v;
    std::memcpy(&v, image.data() + 8 * k, 8);
    if (!InWindow(v) || at.Contains(v)) continue;
    MemRange target;
    if (const MemRange* r = FindKnown(v)) {
      target = *r;
    } else {
      if (v < kMinProbed || v >= kMaxProbed || !probe_) continue;
      if (probed_.count(v)) continue;  // probed before and not found
      if (summary_.probes >= limits_.max_probes) {
        if (unresolved_.size() < kMaxUnresolved) unresolved_.insert(v);
        continue;
      }
      ++summary_.probes;
      probed_.insert(v);
      std::optional<MemRange> found = probe_(v);
      if (!found || found->size == 0 || !found->Contains(v)) continue;
      InsertSorted(known_, *found);
      AddWindow(*found);
      last_hit_ = known_.size();
      target = *found;
    }
    auto [it, fresh] = hits.try_emplace(target.address);
    ReachedAllocation& h = it->second;
    const uint64_t offset = 8 * uint64_t(k);
    if (fresh) {
      h.range = target;
      h.via = at.address;
      h.first_offset = offset;
      h.depth = depth + 1;
    }
    h.last_offset = offset;
    ++h.pointers;
  }
  summary_.words_unresolved = unresolved_.size();
  std::vector<ReachedAllocation> order;
  order.reserve(hits.size());
  for (auto& [base, h] : hits)
    if (!overlaps_taken(h.range)) order.push_back(h);
  std::sort(order.begin(), order.end(), [](const ReachedAllocation& a, const ReachedAllocation& b) {
    return a.first_offset < b.first_offset;
  });
  std::vector<ReachedAllocation> out;
  for (const ReachedAllocation& h : order) {
    if (overlaps_taken(h.range)) continue;  // an earlier hit of this scan took it
    if (depth >= limits_.max_depth) {
      ++summary_.ranges_past_depth;
      InsertSorted(taken_, h.range);  // counted once
      continue;
    }
    if (bytes_taken_ + h.range.size > limits_.max_bytes) {
      ++summary_.ranges_over_budget;
      summary_.bytes_over_budget += h.range.size;
      InsertSorted(taken_, h.range);  // counted once
      continue;
    }
    bytes_taken_ += h.range.size;
    InsertSorted(taken_, h.range);
    out.push_back(h);
  }
  return out;
}

}  // namespace tracesmith::replay_capture
