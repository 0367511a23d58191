// A streaming JSON writer for reports: keys and values are written in call
// order, nesting and commas are handled here. The text goes through the
// exporters' JsonBuffer (base/json_buffer.h: escaping, numbers) and on to the
// stream whenever a top-level value is complete, at 64 KiB, and at the end.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string_view>
#include <vector>

#include "tracesmith/base/json_buffer.h"

namespace tracesmith::analysis {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out), buf_(size_t{1} << 12) {}
  ~JsonWriter() { Flush(); }
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject(std::string_view key = {}) { return Open(key, '{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray(std::string_view key = {}) { return Open(key, '['); }
  JsonWriter& EndArray() { return Close(']'); }

  JsonWriter& Key(std::string_view key) {
    Comma();
    buf_.String(key);
    buf_.Char(':');
    after_key_ = true;
    return *this;
  }
  JsonWriter& Str(std::string_view key, std::string_view v) {
    Value(key);
    buf_.String(v);
    return *this;
  }
  JsonWriter& UInt(std::string_view key, uint64_t v) {
    Value(key);
    buf_.Uint(v);
    return *this;
  }
  JsonWriter& Num(std::string_view key, double v) {
    Value(key);
    char text[32];
    int n = std::snprintf(text, sizeof text, "%.6g", v);
    buf_.Raw(std::string_view(text, n > 0 ? size_t(n) : 0));
    return *this;
  }
  // A value written so that it reads back bit for bit (shortest round-trip
  // form): for values the program itself reported (app counters), which the
  // reader compares with its own.
  JsonWriter& Exact(std::string_view key, double v) {
    Value(key);
    char text[32];
    const auto r = std::to_chars(text, text + sizeof text, v);
    buf_.Raw(std::string_view(text, size_t(r.ptr - text)));
    return *this;
  }
  // A finite value, else null (a mean no sample covered).
  JsonWriter& NumOrNull(std::string_view key, double v) {
    return std::isfinite(v) ? Num(key, v) : Null(key);
  }
  JsonWriter& ExactOrNull(std::string_view key, double v) {
    return std::isfinite(v) ? Exact(key, v) : Null(key);
  }
  JsonWriter& Null(std::string_view key) {
    Value(key);
    buf_.Raw("null");
    return *this;
  }
  // A value that is already JSON text (another writer's document).
  JsonWriter& Raw(std::string_view key, std::string_view json) {
    Key(key);
    after_key_ = false;
    while (!json.empty() && (json.back() == '\n' || json.back() == ' ')) json.remove_suffix(1);
    buf_.Raw(json);
    return *this;
  }
  JsonWriter& Bool(std::string_view key, bool v) {
    Value(key);
    if (v)
      buf_.Raw("true");
    else
      buf_.Raw("false");
    return *this;
  }

 private:
  // Before a value: its key in an object, or the comma in an array.
  void Value(std::string_view key) {
    if (!key.empty())
      Key(key);
    else
      Comma();
    after_key_ = false;
  }
  JsonWriter& Open(std::string_view key, char c) {
    Value(key);
    buf_.Char(c);
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char c) {
    first_.pop_back();
    buf_.Char(c);
    if (first_.empty()) {
      buf_.Char('\n');
      Flush();
    } else if (buf_.size() >= (size_t{1} << 16)) {
      Flush();
    }
    return *this;
  }
  void Comma() {
    if (after_key_) return;
    if (!first_.empty()) {
      if (!first_.back()) buf_.Char(',');
      first_.back() = false;
    }
  }
  void Flush() {
    std::string_view text = buf_.view();
    if (!text.empty()) out_.write(text.data(), std::streamsize(text.size()));
    buf_.Clear();
  }

  std::ostream& out_;
  JsonBuffer buf_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace tracesmith::analysis
