// Pattern: an ECMAScript regular expression behind a small interface, so that
// one translation unit (src/base/pattern.cc) instantiates <regex>: each one
// that did cost ~3 s of compile time (15 did, in every build of the test
// command), while including this header costs nothing of it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tracesmith/base/status.h"

namespace tracesmith {

class Pattern {
 public:
  // A pattern that matches nothing (also what a default-constructed one does).
  Pattern() = default;
  // InvalidArgument carrying the regex library's message when `text` is not a
  // valid ECMAScript regular expression; `optimize`: faster matching, slower
  // compiling (std::regex::optimize).
  static StatusOr<Pattern> Compile(const std::string& text, bool optimize = true);
  // regex_search: whether the pattern matches somewhere in `s`.
  bool Search(std::string_view s) const;
  const std::string& text() const { return text_; }

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;  // null: matches nothing
  std::string text_;
};

}  // namespace tracesmith
