// PackedRecords<N>: records of N 64-bit fields held in a few bits per field, readable at
// any index in constant time. The form a compact trace's records are to take to hold 100 M
// kernels in 2 GB (#41 item 6; src/timeline/README.md, "Packed records").
//
// Records are appended in blocks of kBlock. A full block stores, per field, its smallest
// value (the base) and each record's offset from it in `width` bits (frame of reference);
// the few largest offsets, when widening every slot for them would cost more, are stored
// whole after the field's slots ("exceptions", patched frame of reference): their slots
// hold max_slot - ordinal, above every other slot. The fields of a block lie together (one
// header, one run of words), so reading a record at random touches a header and a few
// neighbouring cache lines. A field of 128 slots of w bits takes exactly 2w words. A field
// that advances steadily (start times, correlation ids of a lane) is stored from a line
// instead, when that takes fewer bits: record i's value is base + i * step + slot (a
// "linear" field, its step one word after its exceptions), still read in constant time;
// the base, step and slots wrap modulo 2^64. The last, unfilled block stays as plain values
// until it fills, so the records are readable while they grow; the words grow by pages,
// never by copying what they hold.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace tracesmith::analysis {

namespace packed {

inline constexpr size_t kBlock = 128;
// Exceptions a field of a block may have: beyond, its slots widen instead.
inline constexpr size_t kMaxExceptions = 16;
// Words per page at most: a block never spans two pages.
inline constexpr uint32_t kPageBits = 16;
inline constexpr uint32_t kPageWords = uint32_t(1) << kPageBits;

inline uint64_t MaxSlot(uint32_t width) {
  return width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
}
inline uint64_t Slot(const uint64_t* words, size_t bit, uint32_t width) {
  if (width == 0) return 0;
  const size_t q = bit / 64, r = bit % 64;
  uint64_t v = words[q] >> r;
  if (r + width > 64) v |= words[q + 1] << (64 - r);
  return v & MaxSlot(width);
}

// Writes the kBlock slots slot(0) .. slot(kBlock - 1) (each under 2^width) in `width` bits
// each into words[0, 2 * width): what Slot reads. Each word is made in a register and stored
// once (an OR into memory per slot waits on the previous slot's store).
template <typename SlotAt>
inline void PutSlots(uint64_t* words, uint32_t width, const SlotAt& slot) {
  if (width == 0) return;
  uint64_t word = 0;
  uint32_t filled = 0;  // bits of `word` taken
  for (size_t i = 0; i < kBlock; ++i) {
    const uint64_t v = slot(i);
    word |= v << filled;
    filled += width;
    if (filled >= 64) {
      *words++ = word;
      filled -= 64;
      word = filled ? v >> (width - filled) : 0;  // the slot's bits past the word
    }
  }
}

// How one field of a full block is stored: its slots' width (kLinear set: from a line, the
// step after the exceptions), its exceptions, its base.
inline constexpr uint8_t kLinear = 0x80;
struct FieldCode {
  uint64_t base = 0;
  uint8_t code = 0;  // width | kLinear when linear
  uint8_t exceptions = 0;
  uint32_t width() const { return code & 0x7f; }
  bool linear() const { return code & kLinear; }
  // The words the field takes: slots, exceptions, step.
  uint32_t words() const { return 2 * width() + exceptions + (linear() ? 1 : 0); }
};

// A field of a full block (its slots at `words`, the exceptions and step after them) into
// values[0, kBlock): one loop compiled per width (a whole 6-field record 5.6 ns a block at a
// time against 11.0 ns read slot by slot, 2026-12-01, this VM).
void UnpackField(const uint64_t* words, const FieldCode& c, uint64_t* values);
// Record i's value of a field of a full block.
inline uint64_t DecodeOne(const uint64_t* words, const FieldCode& c, size_t i) {
  const uint32_t width = c.width();
  const uint64_t slot = Slot(words, i * width, width);
  const uint64_t top = MaxSlot(width);
  if (c.exceptions && slot > top - c.exceptions) return words[2 * width + (top - slot)];
  const uint64_t v = c.base + slot;
  return c.linear() ? v + i * words[2 * width + c.exceptions] : v;
}

// A number no other packed store was given (never 0): what a thread's cache of decoded blocks
// tags them with (PackedLanes, IndexColumn).
uint64_t NextGeneration();

// Packs `values` (kBlock of them) into `out` (zeroed, room for kMaxFieldWords words) in the
// fewest bits, from its smallest value or from a line; returns how (FieldCode::words: the
// words it wrote).
inline constexpr size_t kMaxFieldWords = 2 * 64 + kMaxExceptions + 1;
FieldCode PackField(const uint64_t* values, uint64_t* out);
// Grows `pages` so that `words` more fit in one page; returns where they go.
struct Pages {
  std::vector<std::unique_ptr<uint64_t[]>> list;
  std::vector<uint32_t> sizes;  // of each page
  uint32_t used = 0, size = 0;  // of the last page
  size_t bytes = 0, words_used = 0;
  uint32_t Take(uint32_t words);  // first word: page << kPageBits | offset
  // Gives back the `words` taken last, at `word` (what Take returned): zeroed, to be taken
  // again; pages after it freed.
  void GiveBack(uint32_t word, uint32_t words);
  const uint64_t* At(uint32_t word) const {
    return list[word >> kPageBits].get() + (word & (kPageWords - 1));
  }
  uint64_t* At(uint32_t word) { return list[word >> kPageBits].get() + (word & (kPageWords - 1)); }
};

}  // namespace packed

template <size_t N>
class PackedRecords {
 public:
  static constexpr size_t kBlock = packed::kBlock;
  using Record = std::array<uint64_t, N>;

  PackedRecords() = default;
  PackedRecords(PackedRecords&&) noexcept = default;
  PackedRecords& operator=(PackedRecords&&) noexcept = default;

  void Append(const Record& r) {
    std::memcpy(pending_[size_ % kBlock], r.data(), sizeof(uint64_t) * N);
    if (++size_ % kBlock == 0) PackPending();
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t blocks() const { return (size_ + kBlock - 1) / kBlock; }

  Record Get(size_t i) const {
    Record r;
    const size_t b = i / kBlock;
    if (b >= headers_.size()) {
      std::memcpy(r.data(), pending_[i % kBlock], sizeof(uint64_t) * N);
      return r;
    }
    const Header& h = headers_[b];
    const uint64_t* words = pages_.At(h.word);
    for (size_t f = 0; f < N; ++f) {
      const packed::FieldCode c = h.Field(f);
      r[f] = packed::DecodeOne(words, c, i % kBlock);
      words += c.words();
    }
    return r;
  }
  // Record k of a block decoded into columns (DecodeColumns).
  static Record RowAt(const uint64_t (*columns)[kBlock], size_t k) {
    Record r;
    for (size_t f = 0; f < N; ++f) r[f] = columns[f][k];
    return r;
  }
  // Block b's records, field by field: columns[f][i] is field f of record b * kBlock + i;
  // returns the block's length.
  size_t DecodeColumns(size_t b, uint64_t (*columns)[kBlock]) const {
    if (b >= headers_.size()) {
      const size_t n = size_ - b * kBlock;
      for (size_t i = 0; i < n; ++i)
        for (size_t f = 0; f < N; ++f) columns[f][i] = pending_[i][f];
      return n;
    }
    const Header& h = headers_[b];
    const uint64_t* words = pages_.At(h.word);
    for (size_t f = 0; f < N; ++f) {
      const packed::FieldCode c = h.Field(f);
      packed::UnpackField(words, c, columns[f]);
      words += c.words();
    }
    return kBlock;
  }

  // Bytes the records take: slots, exceptions, headers and the unfilled block (what a
  // packed record costs); and the memory held, with the unused ends of the last page and
  // of the headers' array.
  size_t bytes() const {
    return headers_.size() * sizeof(Header) + pages_.words_used * 8 + sizeof(pending_);
  }
  size_t reserved_bytes() const {
    return headers_.capacity() * sizeof(Header) + pages_.bytes + sizeof(*this);
  }
  void Clear() { *this = PackedRecords(); }
  // Removes the last records, whole blocks (and the unfilled one), at least `n` of them or
  // all; appends them to `out` in order. What LaneBuilder takes back to put a late record
  // in its place.
  template <typename Out>
  void PopTail(size_t n, Out* out) {
    const size_t keep_blocks = size_ >= n ? (size_ - n) / kBlock : 0;
    const size_t from = keep_blocks * kBlock;
    for (size_t i = from; i < size_; ++i) out->push_back(Get(i));
    while (headers_.size() > keep_blocks) {
      const Header& h = headers_.back();
      uint32_t words = 0;
      for (size_t f = 0; f < N; ++f) words += h.Field(f).words();
      pages_.GiveBack(h.word, words);
      headers_.pop_back();
    }
    size_ = from;
  }

 private:
  // 8 bytes per field and 4 per block: 64 bytes for 6 fields, half a byte a record.
  struct Header {
    uint64_t base[N] = {};
    uint32_t word = 0;
    uint8_t code[N] = {};
    uint8_t exceptions[N] = {};
    packed::FieldCode Field(size_t f) const { return {base[f], code[f], exceptions[f]}; }
  };
  void PackPending() {
    Header h;
    uint64_t scratch[N][packed::kMaxFieldWords];
    uint32_t words[N], total = 0;
    uint64_t values[kBlock];
    for (size_t f = 0; f < N; ++f) {
      for (size_t i = 0; i < kBlock; ++i) values[i] = pending_[i][f];
      std::memset(scratch[f], 0, sizeof(scratch[f]));
      const packed::FieldCode c = packed::PackField(values, scratch[f]);
      h.base[f] = c.base;
      h.code[f] = c.code;
      h.exceptions[f] = c.exceptions;
      words[f] = c.words();
      total += words[f];
    }
    h.word = pages_.Take(total);
    uint64_t* out = pages_.At(h.word);
    for (size_t f = 0; f < N; ++f) {
      std::memcpy(out, scratch[f], words[f] * sizeof(uint64_t));
      out += words[f];
    }
    headers_.push_back(h);
  }

  std::vector<Header> headers_;
  packed::Pages pages_;
  size_t size_ = 0;
  uint64_t pending_[kBlock][N] = {};
};

}  // namespace tracesmith::analysis
