// ProtoEncoder: protobuf wire-format writing by hand, protozero style.
//
// Fields are appended straight into one byte buffer. Every scalar field
// reserves its worst case (tag + 10-byte varint or 8 bytes) with one compare
// and writes its bytes in place: no memcpy call per varint, which was the
// exporter's largest single cost. A nested message gets a one-byte length
// placeholder; when it closes, a body of 128 bytes or more is shifted right
// to make room for the longer varint. Nearly every message an exporter
// writes is shorter than that, so the common case is one store.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace tracesmith::exporter {

// Encoded bytes are written as char8_t, not uint8_t: a store through an
// unsigned char pointer may alias any object, so after each one the compiler
// reloads the encoder's size and buffer and the caller's fields (every
// event's writer code did); a char8_t store cannot alias them. The buffer
// holds char8_t objects and is read back as bytes (data()).
using ProtoByte = char8_t;

class ProtoEncoder {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

  ProtoEncoder() { Grow(4096); }
  ProtoEncoder(const ProtoEncoder&) = delete;
  ProtoEncoder& operator=(const ProtoEncoder&) = delete;
  void Clear() { size_ = 0; }
  size_t size() const { return size_; }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(buf_.get()); }

  void Varint(uint32_t field, uint64_t v) {
    ProtoByte* p = Reserve(kMaxScalar);
    p = EncodeVarintTo(Tag(field, kVarint), p);
    size_ = static_cast<size_t>(EncodeVarintTo(v, p) - buf_.get());
  }
  // A varint field whose tag is known at compile time (one or two bytes).
  template <uint32_t kField>
  void Varint(uint64_t v) {
    constexpr uint64_t kTag = Tag(kField, kVarint);
    static_assert(kTag < 0x4000, "two-byte tags at most");
    ProtoByte* p = Reserve(kMaxScalar);
    if constexpr (kTag < 0x80) {
      *p++ = static_cast<ProtoByte>(kTag);
    } else {
      *p++ = static_cast<ProtoByte>(kTag | 0x80);
      *p++ = static_cast<ProtoByte>(kTag >> 7);
    }
    size_ = static_cast<size_t>(EncodeVarintTo(v, p) - buf_.get());
  }
  void Int(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Bool(uint32_t field, bool v) { Varint(field, v ? 1 : 0); }
  void Fixed64(uint32_t field, uint64_t v) {
    ProtoByte* p = Reserve(kMaxScalar);
    p = EncodeVarintTo(Tag(field, kFixed64), p);
    std::memcpy(p, &v, 8);
    size_ = static_cast<size_t>(p + 8 - buf_.get());
  }
  void Double(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    Fixed64(field, bits);
  }
  void Bytes(uint32_t field, const void* data, size_t n) {
    ProtoByte* p = Reserve(kMaxScalar + n);
    p = EncodeVarintTo(Tag(field, kLengthDelimited), p);
    p = EncodeVarintTo(n, p);
    if (n > 0) std::memcpy(p, data, n);
    size_ = static_cast<size_t>(p + n - buf_.get());
  }
  void String(uint32_t field, std::string_view s) { Bytes(field, s.data(), s.size()); }

  // Pre-encoded fields: room for up to n bytes at the returned pointer;
  // CommitRaw(end) then appends the bytes written up to `end`.
  ProtoByte* BeginRaw(size_t n) { return Reserve(n); }
  void CommitRaw(const ProtoByte* end) { size_ = static_cast<size_t>(end - buf_.get()); }

  // Opens a nested message; returns the token for EndNested.
  size_t BeginNested(uint32_t field) {
    ProtoByte* p = Reserve(kMaxScalar);
    p = EncodeVarintTo(Tag(field, kLengthDelimited), p);
    *p++ = 0;
    size_ = static_cast<size_t>(p - buf_.get());
    return size_;
  }
  void EndNested(size_t body_start) {
    size_t len = size_ - body_start;
    if (len < 0x80) [[likely]] {
      buf_[body_start - 1] = static_cast<ProtoByte>(len);
      return;
    }
    EndLongNested(body_start, len);
  }
  // A body of 128 bytes or more: shifted right for its longer length.
  [[gnu::noinline]] void EndLongNested(size_t body_start, size_t len) {
    ProtoByte tmp[10];
    size_t n = EncodeVarint(len, tmp);
    Reserve(n);
    std::memmove(buf_.get() + body_start - 1 + n, buf_.get() + body_start, len);
    std::memcpy(buf_.get() + body_start - 1, tmp, n);
    size_ += n - 1;
  }

  static size_t EncodeVarint(uint64_t v, ProtoByte* out) {
    return static_cast<size_t>(EncodeVarintTo(v, out) - out);
  }
  static ProtoByte* EncodeVarintTo(uint64_t v, ProtoByte* p) {
    while (v >= 0x80) {
      *p++ = static_cast<ProtoByte>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<ProtoByte>(v);
    return p;
  }

 private:
  // A tag (up to 5 bytes) plus a 10-byte varint or 8 fixed bytes.
  static constexpr size_t kMaxScalar = 16;
  static constexpr uint64_t Tag(uint32_t field, WireType type) {
    return (uint64_t{field} << 3) | type;
  }
  // Room for n more bytes; returns where they go.
  ProtoByte* Reserve(size_t n) {
    if (size_ + n > capacity_) [[unlikely]]
      Grow(n);
    return buf_.get() + size_;
  }
  [[gnu::noinline]] void Grow(size_t n) {
    size_t cap = std::max(capacity_ * 2, size_ + n + 64);
    auto bigger = std::make_unique_for_overwrite<ProtoByte[]>(cap);
    if (size_ > 0) std::memcpy(bigger.get(), buf_.get(), size_);
    buf_ = std::move(bigger);
    capacity_ = cap;
  }
  std::unique_ptr<ProtoByte[]> buf_;  // capacity_ bytes; [0, size_) are the message
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace tracesmith::exporter
