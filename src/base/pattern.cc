#include "tracesmith/base/pattern.h"

#include <regex>

namespace tracesmith {

struct Pattern::Impl {
  std::regex re;
};

StatusOr<Pattern> Pattern::Compile(const std::string& text, bool optimize) {
  Pattern p;
  try {
    auto flags = std::regex::ECMAScript;
    if (optimize) flags |= std::regex::optimize;
    p.impl_ = std::make_shared<const Impl>(Impl{std::regex(text, flags)});
  } catch (const std::regex_error& e) {
    return InvalidArgument(e.what());
  }
  p.text_ = text;
  return p;
}

bool Pattern::Search(std::string_view s) const {
  return impl_ && std::regex_search(s.begin(), s.end(), impl_->re);
}

}  // namespace tracesmith
