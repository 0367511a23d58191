// A minimal streaming JSON writer: enough for reports, no dependency.
// Keys and values are written in call order; commas are handled here.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string_view>
#include <vector>

namespace tracesmith::analysis {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  JsonWriter& BeginObject(std::string_view key = {}) { return Open(key, '{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray(std::string_view key = {}) { return Open(key, '['); }
  JsonWriter& EndArray() { return Close(']'); }

  JsonWriter& Key(std::string_view key) {
    Comma();
    String(key);
    out_ << ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& Str(std::string_view key, std::string_view v) {
    if (!key.empty())
      Key(key);
    else
      Comma();
    after_key_ = false;
    String(v);
    return *this;
  }
  JsonWriter& UInt(std::string_view key, uint64_t v) {
    if (!key.empty())
      Key(key);
    else
      Comma();
    after_key_ = false;
    out_ << v;
    return *this;
  }
  JsonWriter& Num(std::string_view key, double v) {
    if (!key.empty())
      Key(key);
    else
      Comma();
    after_key_ = false;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    out_ << buf;
    return *this;
  }
  JsonWriter& Bool(std::string_view key, bool v) {
    if (!key.empty())
      Key(key);
    else
      Comma();
    after_key_ = false;
    out_ << (v ? "true" : "false");
    return *this;
  }

 private:
  JsonWriter& Open(std::string_view key, char c) {
    if (!key.empty())
      Key(key);
    else
      Comma();
    after_key_ = false;
    out_ << c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char c) {
    first_.pop_back();
    out_ << c;
    if (first_.empty()) out_ << '\n';
    return *this;
  }
  void Comma() {
    if (after_key_) return;
    if (!first_.empty()) {
      if (!first_.back()) out_ << ',';
      first_.back() = false;
    }
  }
  void String(std::string_view s) {
    out_ << '"';
    for (char c : s) {
      switch (c) {
        case '"':
          out_ << "\\\"";
          break;
        case '\\':
          out_ << "\\\\";
          break;
        case '\n':
          out_ << "\\n";
          break;
        case '\t':
          out_ << "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out_ << buf;
          } else {
            out_ << c;
          }
      }
    }
    out_ << '"';
  }

  std::ostream& out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace tracesmith::analysis
