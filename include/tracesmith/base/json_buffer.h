// JsonBuffer: appends JSON text to a buffer quickly (no DOM), with correct
// string escaping: quotes, backslashes and control characters are escaped,
// and bytes that are not valid UTF-8 become U+FFFD so every output parses.
//
// The buffer is a plain byte array with a cursor: each piece reserves its
// worst case with one compare and is written in place. String literals are
// copied with a compile-time length (inlined, no memcpy call), numbers go
// through std::to_chars straight into the buffer. The exporter emits several
// hundred bytes per event in ~30 pieces, so std::string's per-append
// bookkeeping was most of its cost. The exporters write through it directly;
// analysis/'s structured report writer (keys, nesting, commas) sits on it.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "tracesmith/base/json_escape.h"

namespace tracesmith {

class JsonBuffer {
 public:
  explicit JsonBuffer(size_t initial = size_t{1} << 16) { Grow(initial); }
  JsonBuffer(const JsonBuffer&) = delete;
  JsonBuffer& operator=(const JsonBuffer&) = delete;

  std::string_view view() const { return {buf_.get(), size_}; }
  size_t size() const { return size_; }
  void Clear() { size_ = 0; }

  // A string literal: its length is a constant, so the copy is inlined.
  template <size_t N>
  void Raw(const char (&s)[N]) {
    char* p = Reserve(N - 1);
    std::memcpy(p, s, N - 1);
    size_ += N - 1;
  }
  void Raw(std::string_view s) {
    char* p = Reserve(s.size());
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    size_ += s.size();
  }
  void Char(char c) {
    *Reserve(1) = c;
    ++size_;
  }
  void Uint(uint64_t v) {
    char* p = Reserve(20);
    size_ = static_cast<size_t>(std::to_chars(p, p + 20, v).ptr - buf_.get());
  }
  void Int(int64_t v) {
    char* p = Reserve(20);
    size_ = static_cast<size_t>(std::to_chars(p, p + 20, v).ptr - buf_.get());
  }
  // Shortest representation that reads back to the same double, always
  // with a '.' or an exponent (2.0 is written "2.0", not "2"): readers that
  // type values by their JSON form see a float every time, as in torch's
  // traces ("blocks per SM": 0.242424).
  void Double(double v) {
    char* p = Reserve(32);
    char* end = std::to_chars(p, p + 30, v).ptr;
    bool integral = true;
    for (const char* c = p; c < end && integral; ++c)
      integral = (*c >= '0' && *c <= '9') || (*c == '-' && c == p);
    if (integral) {
      end[0] = '.';
      end[1] = '0';
      end += 2;
    }
    size_ = static_cast<size_t>(end - buf_.get());
  }
  // Nanoseconds as microseconds with exactly three decimals ("12.345"), the
  // form Kineto writes: exact, no floating point involved.
  void Micros(uint64_t ns) {
    char* p = Reserve(24);
    p = std::to_chars(p, p + 20, ns / 1000).ptr;
    p[0] = '.';
    p[1] = static_cast<char>('0' + (ns / 100) % 10);
    p[2] = static_cast<char>('0' + (ns / 10) % 10);
    p[3] = static_cast<char>('0' + ns % 10);
    size_ = static_cast<size_t>(p + 4 - buf_.get());
  }
  // A quoted, escaped string.
  void String(std::string_view s) {
    char* p = Reserve(kJsonMaxEscapedPerByte * s.size() + 2);
    *p++ = '"';
    p = JsonEscapeTo(s, p);
    *p++ = '"';
    size_ = static_cast<size_t>(p - buf_.get());
  }
  // Appends the escaped form of `s` (no quotes) to `out`.
  static void Escape(std::string_view s, std::string* out) { AppendJsonEscaped(s, out); }

 private:
  char* Reserve(size_t n) {
    if (size_ + n > capacity_) [[unlikely]]
      Grow(n);
    return buf_.get() + size_;
  }
  void Grow(size_t n) {
    size_t cap = std::max(capacity_ * 2, size_ + n + 64);
    auto bigger = std::make_unique_for_overwrite<char[]>(cap);
    if (size_ > 0) std::memcpy(bigger.get(), buf_.get(), size_);
    buf_ = std::move(bigger);
    capacity_ = cap;
  }
  std::unique_ptr<char[]> buf_;
  size_t capacity_ = 0, size_ = 0;
};

}  // namespace tracesmith
