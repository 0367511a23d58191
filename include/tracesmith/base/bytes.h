// Byte-level building blocks: little-endian fixed ints, LEB128 varints,
// zigzag, a growable output buffer and a bounds-checked input cursor.
//
// ByteCursor never reads past its end: every Read* returns false (and leaves
// the cursor unusable for that value) when too few bytes remain, so parsers
// check lengths before they allocate anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tracesmith {

// A T read from possibly unaligned memory, in host byte order (the formats
// read this way are little-endian, like every host TraceSmith runs on).
template <typename T>
inline T LoadUnaligned(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline uint64_t ZigZagEncode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t ZigZagDecode(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Appends bytes; the hot path (varint of a small value) is inline and branch-light.
class ByteWriter {
 public:
  void Reserve(size_t n) { buf_.reserve(n); }
  void Clear() { buf_.clear(); }
  size_t size() const { return buf_.size(); }
  const uint8_t* data() const { return buf_.data(); }
  std::vector<uint8_t>& buffer() { return buf_; }
  const std::vector<uint8_t>& buffer() const { return buf_; }

  void PutU8(uint8_t v) { buf_.push_back(v); }
  void PutU16(uint16_t v) { PutFixed(v); }
  void PutU32(uint32_t v) { PutFixed(v); }
  void PutU64(uint64_t v) { PutFixed(v); }
  void PutBytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void PutVarint(uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
      tmp[n++] = static_cast<uint8_t>(v) | 0x80;
      v >>= 7;
    }
    tmp[n++] = static_cast<uint8_t>(v);
    buf_.insert(buf_.end(), tmp, tmp + n);
  }
  void PutSignedVarint(int64_t v) { PutVarint(ZigZagEncode(v)); }
  // Length-prefixed bytes.
  void PutString(std::string_view s) {
    PutVarint(s.size());
    PutBytes(s.data(), s.size());
  }
  // Overwrites 4 bytes at `pos` (used to patch lengths written after the fact).
  void PatchU32(size_t pos, uint32_t v) { std::memcpy(buf_.data() + pos, &v, 4); }

 private:
  template <typename T>
  void PutFixed(T v) {  // little-endian hosts only (x86-64, aarch64)
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    buf_.insert(buf_.end(), tmp, tmp + sizeof(T));
  }
  std::vector<uint8_t> buf_;
};

class ByteCursor {
 public:
  ByteCursor() = default;
  ByteCursor(const uint8_t* data, size_t size) : p_(data), end_(data + size), begin_(data) {}

  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  size_t position() const { return static_cast<size_t>(p_ - begin_); }
  bool empty() const { return p_ == end_; }
  const uint8_t* current() const { return p_; }

  bool ReadU8(uint8_t* v) { return ReadFixed(v); }
  bool ReadU16(uint16_t* v) { return ReadFixed(v); }
  bool ReadU32(uint32_t* v) { return ReadFixed(v); }
  bool ReadU64(uint64_t* v) { return ReadFixed(v); }
  bool ReadVarint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      uint8_t b = *p_++;
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *v = result;
        return true;
      }
    }
    return false;  // more than 10 bytes: malformed
  }
  bool ReadSignedVarint(int64_t* v) {
    uint64_t u;
    if (!ReadVarint(&u)) return false;
    *v = ZigZagDecode(u);
    return true;
  }
  // Returns a view of the next n bytes, or false when fewer remain.
  bool ReadBytes(size_t n, const uint8_t** out) {
    if (n > remaining()) return false;
    *out = p_;
    p_ += n;
    return true;
  }
  bool ReadString(std::string_view* s) {
    uint64_t n;
    const uint8_t* b;
    if (!ReadVarint(&n) || n > remaining() || !ReadBytes(n, &b)) return false;
    *s = std::string_view(reinterpret_cast<const char*>(b), n);
    return true;
  }
  bool Skip(size_t n) {
    if (n > remaining()) return false;
    p_ += n;
    return true;
  }
  // A sub-cursor over the next n bytes (advancing this one past them).
  bool Sub(size_t n, ByteCursor* out) {
    const uint8_t* b;
    if (!ReadBytes(n, &b)) return false;
    *out = ByteCursor(b, n);
    return true;
  }

 private:
  template <typename T>
  bool ReadFixed(T* v) {
    if (sizeof(T) > remaining()) return false;
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  const uint8_t* begin_ = nullptr;
};

}  // namespace tracesmith
