// ProtoEncoder: protobuf wire-format writing by hand, protozero style.
//
// Fields are appended straight into one byte buffer. A nested message gets
// a one-byte length placeholder; when it closes, a body of 128 bytes or more
// is shifted right to make room for the longer varint. Nearly every message
// an exporter writes is shorter than that, so the common case is one store.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tracesmith::exporter {

class ProtoEncoder {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

  ProtoEncoder() { Grow(4096); }
  void Clear() { size_ = 0; }
  size_t size() const { return size_; }
  const uint8_t* data() const { return buf_.data(); }

  void Varint(uint32_t field, uint64_t v) {
    Tag(field, kVarint);
    PutVarint(v);
  }
  void Int(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Bool(uint32_t field, bool v) { Varint(field, v ? 1 : 0); }
  void Fixed64(uint32_t field, uint64_t v) {
    Tag(field, kFixed64);
    Put(&v, 8);
  }
  void Double(uint32_t field, double v) {
    Tag(field, kFixed64);
    Put(&v, 8);
  }
  void Bytes(uint32_t field, const void* p, size_t n) {
    Tag(field, kLengthDelimited);
    PutVarint(n);
    Put(p, n);
  }
  void String(uint32_t field, std::string_view s) { Bytes(field, s.data(), s.size()); }

  // Opens a nested message; returns the token for EndNested.
  size_t BeginNested(uint32_t field) {
    Tag(field, kLengthDelimited);
    uint8_t zero = 0;
    Put(&zero, 1);
    return size_;
  }
  void EndNested(size_t body_start) {
    size_t len = size_ - body_start;
    if (len < 0x80) {
      buf_[body_start - 1] = static_cast<uint8_t>(len);
      return;
    }
    uint8_t tmp[10];
    size_t n = EncodeVarint(len, tmp);
    if (size_ + n > buf_.size()) Grow(n);
    std::memmove(buf_.data() + body_start - 1 + n, buf_.data() + body_start, len);
    std::memcpy(buf_.data() + body_start - 1, tmp, n);
    size_ += n - 1;
  }

  static size_t EncodeVarint(uint64_t v, uint8_t* out) {
    size_t n = 0;
    while (v >= 0x80) {
      out[n++] = static_cast<uint8_t>(v) | 0x80;
      v >>= 7;
    }
    out[n++] = static_cast<uint8_t>(v);
    return n;
  }

 private:
  void Tag(uint32_t field, WireType type) { PutVarint((uint64_t{field} << 3) | type); }
  void PutVarint(uint64_t v) {
    uint8_t tmp[10];
    Put(tmp, EncodeVarint(v, tmp));
  }
  void Put(const void* p, size_t n) {
    if (size_ + n > buf_.size()) Grow(n);
    std::memcpy(buf_.data() + size_, p, n);
    size_ += n;
  }
  void Grow(size_t n) { buf_.resize(std::max(buf_.size() * 2, size_ + n + 64)); }
  std::vector<uint8_t> buf_;  // capacity; bytes [0, size_) are the message
  size_t size_ = 0;
};

}  // namespace tracesmith::exporter
