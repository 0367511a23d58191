// JsonWriter: appends JSON text to a buffer quickly (no DOM), with correct
// string escaping: quotes, backslashes and control characters are escaped,
// and bytes that are not valid UTF-8 become U+FFFD so every output parses.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace tracesmith::exporter {

class JsonWriter {
 public:
  std::string& buf() { return buf_; }
  void Raw(std::string_view s) { buf_.append(s); }
  void Char(char c) { buf_.push_back(c); }
  void Uint(uint64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }
  void Int(int64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }
  // Shortest representation that reads back to the same double.
  void Double(double v) {
    char tmp[32];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }
  // Nanoseconds as microseconds with exactly three decimals ("12.345"), the
  // form Kineto writes: exact, no floating point involved.
  void Micros(uint64_t ns) {
    Uint(ns / 1000);
    char frac[4] = {'.', static_cast<char>('0' + (ns / 100) % 10),
                    static_cast<char>('0' + (ns / 10) % 10), static_cast<char>('0' + ns % 10)};
    buf_.append(frac, 4);
  }
  // A quoted, escaped string.
  void String(std::string_view s) {
    buf_.push_back('"');
    Escape(s, &buf_);
    buf_.push_back('"');
  }
  static void Escape(std::string_view s, std::string* out);

 private:
  std::string buf_;
};

}  // namespace tracesmith::exporter
