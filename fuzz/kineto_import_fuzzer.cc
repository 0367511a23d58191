// libFuzzer target: the torch.profiler (Kineto) JSON importer must reject or
// import any input without crashing, hanging or reading out of bounds, from
// a whole text and streamed in pieces (as ImportFile reads a file), with the
// same outcome either way.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tracesmith/import/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tracesmith::importer::DetectImportFormat(text.substr(0, 64));
  auto trace = tracesmith::importer::ImportKinetoJson(text);
  if (trace.ok()) (void)trace->EventCount();
  // Pieces of 1-16 bytes, the size taken from the input's first byte.
  const size_t piece = size ? size_t(data[0] % 16) + 1 : 1;
  size_t at = 0;
  auto streamed = tracesmith::importer::ImportKinetoJsonStream([&](char* buf, size_t cap) {
    size_t n = std::min({piece, cap, size - at});
    std::memcpy(buf, data + at, n);
    at += n;
    return n;
  });
  if (streamed.ok() != trace.ok()) abort();
  if (trace.ok() && streamed->EventCount() != trace->EventCount()) abort();
  return 0;
}
