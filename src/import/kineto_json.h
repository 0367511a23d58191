// The Kineto JSON as the importer reads it (kineto_importer.cc): a SAX handler that hands each
// traceEvents entry over as soon as it is complete, the scalars as they appeared in the file
// (numbers as their text: "ts": 1234.567 is microseconds with three decimals, which a double
// cannot hold exactly), and a gzip stream's bytes as the parser's input, one block at a time.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tracesmith::importer::kineto {

using json = nlohmann::json;

// A scalar as it appeared in the file.
struct Value {
  enum Kind { kNone, kNumber, kString } kind = kNone;
  std::string text;                // number text or string contents
  std::vector<std::string> array;  // numbers of a flat numeric array ("grid": [x, y, z])
};

// "12.345" (microseconds) -> 12345 ns, exactly; other forms via double.
std::optional<int64_t> MicrosToNs(const std::string& t);
std::optional<uint64_t> AsUint(const Value& v);
// A signed integer argument ("Bytes": -1048576), exactly when written as an
// integer; a float's integral part otherwise.
std::optional<int64_t> AsInt(const Value& v);

struct RawEvent {
  std::map<std::string, Value> fields;
  std::map<std::string, Value> args;
};

// Hands each traceEvents entry to `on_event` as soon as it is complete (it
// is not kept: a 1 GB trace is never held as parsed objects); collects the
// top-level scalars and deviceProperties; ignores the rest.
class Collector : public nlohmann::json_sax<json> {
 public:
  explicit Collector(std::function<void(const RawEvent&)> on_event)
      : on_event_(std::move(on_event)) {}
  std::vector<std::map<std::string, Value>> devices;
  std::optional<int64_t> base_ns;
  uint64_t driver_version = 0, runtime_version = 0, cupti_version = 0;
  bool saw_trace_events = false;  // a top-level "traceEvents" array
  std::string error;
  // Maps a position in the bytes the parser saw to the input's (streamed
  // input drops long whitespace runs); identity when unset.
  std::function<uint64_t(uint64_t)> input_position;

  bool null() override { return Scalar(Value{}); }
  bool boolean(bool b) override { return Scalar(Value{Value::kNumber, b ? "1" : "0"}); }
  bool number_integer(number_integer_t v) override {
    return Scalar(Value{Value::kNumber, std::to_string(v)});
  }
  bool number_unsigned(number_unsigned_t v) override {
    return Scalar(Value{Value::kNumber, std::to_string(v)});
  }
  bool number_float(number_float_t, const string_t& raw) override {
    return Scalar(Value{Value::kNumber, raw});
  }
  bool string(string_t& s) override { return Scalar(Value{Value::kString, s}); }
  bool binary(binary_t&) override { return true; }
  bool key(string_t& k) override {
    key_ = k;
    if (depth_ == 1) top_key_ = k;
    return true;
  }
  bool start_object(std::size_t) override {
    ++depth_;
    if (depth_ == 3 && in_events_) {
      event_.fields.clear();
      event_.args.clear();
      in_event_ = true;
    }
    if (depth_ == 3 && in_devices_) devices.emplace_back();
    if (depth_ == 4 && in_events_ && key_ == "args") in_args_ = true;
    return true;
  }
  bool end_object() override {
    if (depth_ == 4) in_args_ = false;
    if (depth_ == 3 && in_event_) {
      on_event_(event_);
      in_event_ = false;
    }
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    ++arrays_;
    if (depth_ == 2 && top_key_ == "traceEvents") in_events_ = saw_trace_events = true;
    if (depth_ == 2 && top_key_ == "deviceProperties") in_devices_ = true;
    if (depth_ == 5 && in_args_) {  // numeric array arg, e.g. "grid": [1, 2, 3]
      array_key_ = key_;
      collecting_array_ = true;
      if (in_event_) event_.args[array_key_].kind = Value::kNumber;
    }
    return true;
  }
  bool end_array() override {
    if (depth_ == 2) in_events_ = in_devices_ = false;
    if (depth_ == 5) collecting_array_ = false;
    --depth_;
    --arrays_;
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error = "byte " + std::to_string(input_position ? input_position(pos) : pos) + ": " + e.what();
    return false;
  }

 private:
  bool Scalar(Value v) {
    if (depth_ == 1 && key_ == "baseTimeNanoseconds") {
      auto n = AsUint(v);
      if (n) base_ns = static_cast<int64_t>(*n);
    } else if (depth_ == 1 && key_ == "cuda_driver_version") {
      driver_version = AsUint(v).value_or(0);
    } else if (depth_ == 1 && key_ == "cuda_runtime_version") {
      runtime_version = AsUint(v).value_or(0);
    } else if (depth_ == 1 && key_ == "cupti_version") {
      cupti_version = AsUint(v).value_or(0);
    } else if (depth_ == 3 && in_event_) {
      event_.fields[key_] = std::move(v);
    } else if (depth_ == 4 && in_args_ && in_event_) {
      event_.args[key_] = std::move(v);
    } else if (depth_ == 5 && collecting_array_ && in_event_) {
      event_.args[array_key_].array.push_back(v.text);
    } else if (depth_ == 3 && in_devices_ && !devices.empty()) {
      devices.back()[key_] = std::move(v);
    }
    return true;
  }
  std::function<void(const RawEvent&)> on_event_;
  RawEvent event_;
  int depth_ = 0, arrays_ = 0;
  bool in_events_ = false, in_devices_ = false, in_args_ = false, collecting_array_ = false;
  bool in_event_ = false;
  std::string key_, top_key_, array_key_;
};

// The bytes of a JSON document as they are read (a gzip stream), one block
// at a time: an input iterator for nlohmann's parser, so the document is
// never held whole.
class BlockIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  // Whitespace between two tokens beyond this many bytes is dropped: the
  // parser's lexer keeps all of it until the next token (a gzip of 1 GiB of
  // spaces would need gigabytes), and no JSON writer indents this deep.
  static constexpr size_t kMaxWhitespaceRun = 4096;

  struct Source {
    std::function<size_t(char*, size_t)> read;  // 0: end (or error, which read reports)
    std::vector<char> block = std::vector<char>(size_t{1} << 16);
    size_t pos = 0, len = 0;
    bool end = false;
    // Where the lexer stands, across blocks: inside a string (after a
    // backslash), and how long the current whitespace run outside strings is.
    bool in_string = false, escaped = false;
    size_t whitespace_run = 0;
    // Dropped bytes: (bytes kept before the drop, bytes dropped up to and
    // including it), one entry per drop point, to give positions in the input.
    uint64_t kept = 0;
    std::vector<std::pair<uint64_t, uint64_t>> drops;
    // The input position of the byte the parser counts as `parsed` (bytes read
    // so far: nlohmann's position), adding what was dropped before it.
    uint64_t InputPosition(uint64_t parsed) const {
      auto it = std::upper_bound(drops.begin(), drops.end(), parsed,
                                 [](uint64_t p, const auto& d) { return p <= d.first; });
      return it == drops.begin() ? parsed : parsed + std::prev(it)->second;
    }
    void Fill() {
      while (!end && pos == len) {
        len = read(block.data(), block.size());
        pos = 0;
        if (len == 0)
          end = true;
        else
          Squeeze();
      }
    }
    void Squeeze() {
      size_t out = 0;
      for (size_t i = 0; i < len; ++i) {
        const char ch = block[i];
        if (in_string) {
          if (escaped)
            escaped = false;
          else if (ch == '\\')
            escaped = true;
          else if (ch == '"')
            in_string = false;
        } else if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') {
          if (++whitespace_run > kMaxWhitespaceRun) {
            const uint64_t at = kept + out;
            if (drops.empty() || drops.back().first != at)
              drops.emplace_back(at, drops.empty() ? 0 : drops.back().second);
            ++drops.back().second;
            continue;
          }
        } else {
          whitespace_run = 0;
          in_string = ch == '"';
        }
        block[out++] = ch;
      }
      len = out;
      kept += out;
    }
  };
  BlockIterator() = default;  // the end
  explicit BlockIterator(Source* s) : s_(s) { s_->Fill(); }
  const char& operator*() const { return s_->block[s_->pos]; }
  BlockIterator& operator++() {
    ++s_->pos;
    s_->Fill();
    return *this;
  }
  void operator++(int) { ++*this; }
  bool operator==(const BlockIterator& o) const { return AtEnd() == o.AtEnd(); }
  bool operator!=(const BlockIterator& o) const { return !(*this == o); }

 private:
  bool AtEnd() const { return s_ == nullptr || (s_->end && s_->pos == s_->len); }
  Source* s_ = nullptr;
};

}  // namespace tracesmith::importer::kineto
