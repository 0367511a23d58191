// libFuzzer target: the torch.profiler (Kineto) JSON importer must reject or
// import any input without crashing, hanging or reading out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tracesmith/import/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tracesmith::importer::DetectImportFormat(text.substr(0, 64));
  auto trace = tracesmith::importer::ImportKinetoJson(text);
  if (trace.ok()) (void)trace->EventCount();
  return 0;
}
