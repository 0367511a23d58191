// Small text helpers shared by the parsers of other tools' output (nvdisasm's
// listing, torch's structured log): std only.
#pragma once

#include <string_view>

namespace tracesmith {

// `s` without spaces, tabs and carriage returns at either end.
inline std::string_view Trim(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace tracesmith
