// libFuzzer target: ParseNvdisasm (symbolize/sass.h), the reader of nvdisasm's
// listing that gives sampled GPU instructions their SASS text: any bytes give
// a listing of functions and offsets, never a crash; each text is a part of
// one input line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tracesmith/symbolize/sass.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto listing = tracesmith::symbolize::ParseNvdisasm(in);
  for (const auto& [function, code] : listing)
    for (const auto& [offset, text] : code)
      if (text.empty() || text.find('\n') != std::string_view::npos || in.find(text) == in.npos)
        std::abort();
  return 0;
}
