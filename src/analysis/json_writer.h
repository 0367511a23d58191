// A minimal streaming JSON writer for reports (escaping: base/json_escape.h).
// Keys and values are written in call order; commas are handled here.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/json_escape.h"

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
  // A value that is already JSON text (another writer's document).
  JsonWriter& Raw(std::string_view key, std::string_view json) {
    Key(key);
    after_key_ = false;
    while (!json.empty() && (json.back() == '\n' || json.back() == ' ')) json.remove_suffix(1);
    out_ << json;
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
    scratch_.clear();
    AppendJsonEscaped(s, &scratch_);
    out_ << '"' << scratch_ << '"';
  }

  std::ostream& out_;
  std::vector<bool> first_;
  bool after_key_ = false;
  std::string scratch_;
};

}  // namespace tracesmith::analysis
