// Numbers of the Kineto JSON as their text reads (kineto_json.h).
#include "kineto_json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tracesmith::importer::kineto {

// "12.345" (microseconds) -> 12345 ns, exactly; other forms via double.
std::optional<int64_t> MicrosToNs(const std::string& t) {
  if (t.empty()) return std::nullopt;
  size_t dot = t.find('.');
  bool plain = t.find_first_of("eE") == std::string::npos;
  if (plain) {
    bool neg = t[0] == '-';
    std::string_view whole(t.data() + neg, (dot == std::string::npos ? t.size() : dot) - neg);
    int64_t us = 0;
    if (!whole.empty()) {
      auto r = std::from_chars(whole.data(), whole.data() + whole.size(), us);
      if (r.ec != std::errc() || r.ptr != whole.data() + whole.size()) return std::nullopt;
    }
    int64_t frac = 0;
    if (dot != std::string::npos) {
      std::string digits = t.substr(dot + 1);
      for (char c : digits)
        if (c < '0' || c > '9') return std::nullopt;
      while (digits.size() < 4) digits.push_back('0');
      frac = (digits[0] - '0') * 100 + (digits[1] - '0') * 10 + (digits[2] - '0');
      if (digits[3] >= '5') ++frac;  // round the fourth decimal
    }
    if (us > INT64_MAX / 1000 - 1000) return std::nullopt;
    int64_t ns = us * 1000 + frac;
    return neg ? -ns : ns;
  }
  char* end = nullptr;
  double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(d) || std::fabs(d) > 9e15) return std::nullopt;
  return static_cast<int64_t>(std::llround(d * 1000.0));
}

std::optional<uint64_t> AsUint(const Value& v) {
  if (v.kind != Value::kNumber) return std::nullopt;
  uint64_t out = 0;
  auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
  if (r.ec == std::errc() && r.ptr == v.text.data() + v.text.size()) return out;
  int64_t s = 0;
  r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), s);
  if (r.ec == std::errc() && r.ptr == v.text.data() + v.text.size())
    return static_cast<uint64_t>(s);
  char* end = nullptr;
  double d = std::strtod(v.text.c_str(), &end);
  if (end == v.text.c_str() || !std::isfinite(d) || d < 0 || d > 1.8e19) return std::nullopt;
  return static_cast<uint64_t>(d);
}

// A signed integer argument ("Bytes": -1048576), exactly when written as an
// integer; a float's integral part otherwise.
std::optional<int64_t> AsInt(const Value& v) {
  if (v.kind != Value::kNumber) return std::nullopt;
  int64_t out = 0;
  auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
  if (r.ec == std::errc() && r.ptr == v.text.data() + v.text.size()) return out;
  char* end = nullptr;
  double d = std::strtod(v.text.c_str(), &end);
  if (end == v.text.c_str() || !std::isfinite(d) || std::fabs(d) > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(d);
}

}  // namespace tracesmith::importer::kineto
