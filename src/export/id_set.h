// IdSet: a set of 32-bit ids (correlation ids) that is a plain bitset while
// the ids are dense, as a capture's are (1, 2, 3, ...), and keeps the ids
// that would stretch the bitset far beyond what it holds in a hash set, so
// that a forged or corrupt id (2^32 - 1) costs one entry, not 512 MiB.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tracesmith::exporter {

class IdSet {
 public:
  [[gnu::always_inline]] void Insert(uint32_t id) {
    const uint32_t w = id / 64;
    if (w < bits_.size()) [[likely]] {
      bits_[w] |= uint64_t{1} << (id % 64);
      ++size_;
      return;
    }
    InsertSlow(id);
  }
  [[gnu::always_inline]] bool Contains(uint32_t id) const {
    const uint32_t w = id / 64;
    if (w < bits_.size() && ((bits_[w] >> (id % 64)) & 1)) return true;
    return !sparse_.empty() && sparse_.count(id) != 0;
  }
  size_t memory_bytes() const { return bits_.size() * 8 + sparse_.size() * 32; }

 private:
  // The bitset grows (doubling) to cover an id while it stays within 8
  // words per word's worth of ids inserted, or 128 KiB: ids at least ~1/8
  // dense. Anything further goes to the hash set.
  [[gnu::noinline]] void InsertSlow(uint32_t id) {
    const size_t need = size_t{id} / 64 + 1;
    const size_t allowed = std::max<size_t>(kMinWords, 8 * (size_ / 64 + 1));
    if (need <= allowed) {
      bits_.resize(std::min(allowed, std::max(need, 2 * bits_.size())));
      bits_[id / 64] |= uint64_t{1} << (id % 64);
    } else {
      sparse_.insert(id);
    }
    ++size_;
  }
  static constexpr size_t kMinWords = 16384;  // ids below 2^20 always dense
  std::vector<uint64_t> bits_;
  std::unordered_set<uint32_t> sparse_;
  uint64_t size_ = 0;  // inserts (repeats included): bounds the bitset's growth
};

// IdMap: 32-bit ids (correlation ids) to 64-bit values (0 = absent), with the
// same shape as IdSet: a plain vector while the ids are dense, a hash map for
// the ids that would stretch it far beyond what it holds (a forged 2^32 - 1
// costs one entry, not 32 GiB).
class IdMap {
 public:
  void Set(uint32_t id, uint64_t value) {
    if (id < dense_.size()) [[likely]] {
      dense_[id] = value;
      ++size_;
      return;
    }
    SetSlow(id, value);
  }
  uint64_t Get(uint32_t id) const {
    if (id < dense_.size()) return dense_[id];
    if (sparse_.empty()) return 0;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? 0 : it->second;
  }
  size_t memory_bytes() const { return dense_.size() * 8 + sparse_.size() * 48; }

 private:
  // The vector grows (doubling) to cover an id while it stays within 8
  // entries per entry set, or 2^16 entries; anything further goes to the
  // hash map. An id kept apart and later covered by the vector is moved in.
  [[gnu::noinline]] void SetSlow(uint32_t id, uint64_t value) {
    const size_t need = size_t{id} + 1;
    const size_t allowed = std::max<size_t>(kMinEntries, 8 * (size_ + 1));
    if (need <= allowed) {
      dense_.resize(std::min(allowed, std::max(need, 2 * dense_.size())), 0);
      for (auto it = sparse_.begin(); it != sparse_.end();) {
        if (it->first < dense_.size()) {
          dense_[it->first] = it->second;
          it = sparse_.erase(it);
        } else {
          ++it;
        }
      }
      dense_[id] = value;
    } else {
      sparse_[id] = value;
    }
    ++size_;
  }
  static constexpr size_t kMinEntries = size_t{1} << 16;
  std::vector<uint64_t> dense_;
  std::unordered_map<uint32_t, uint64_t> sparse_;
  uint64_t size_ = 0;
};

}  // namespace tracesmith::exporter
