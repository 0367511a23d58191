// FlatMapU64: a hash map from nonzero uint64 keys to uint32 values in one
// array (open addressing, linear probing), for the stack collector's
// interning tables: an insert allocates nothing (std::unordered_map
// allocated a node per new frame and node, and reached each entry through a
// bucket pointer: two cache misses and a malloc per new node of a cold stack,
// inside the launch callback; issue #41 item 2). Key 0 marks an empty slot.
// The owner grows it ahead (Reserve, on the writer); an insert that would
// fill it past 3/4 grows it on the spot (rare: the writer keeps it at most
// half full).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tracesmith::stacks {

class FlatMapU64 {
 public:
  // The value of `key` (nonzero), inserting `value` when absent; and whether it was inserted.
  std::pair<uint32_t*, bool> Emplace(uint64_t key, uint32_t value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Rehash(slots_.empty() ? 64 : slots_.size() * 2);
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.key == key) return {&s.value, false};
      if (s.key == 0) {
        s.key = key;
        s.value = value;
        ++size_;
        return {&s.value, true};
      }
    }
  }
  // Room for `n` entries at most half full.
  void Reserve(size_t n) {
    size_t cap = 64;
    while (cap < 2 * n) cap *= 2;
    if (cap > slots_.size()) Rehash(cap);
  }
  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }  // slots

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t value = 0;
  };
  static size_t Hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return size_t(k);
  }
  void Rehash(size_t cap) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{});
    size_ = 0;
    for (const Slot& s : old)
      if (s.key) Emplace(s.key, s.value);
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace tracesmith::stacks
