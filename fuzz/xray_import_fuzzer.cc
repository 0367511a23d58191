// libFuzzer target: the LLVM XRay importer (log decoding, call matching) and
// the ELF instrumentation-map reader must reject or import any input without
// crashing, hanging or reading out of bounds. Each input is tried as both.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tracesmith/import/xray.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracesmith::importer;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)DetectImportFormat(bytes.substr(0, 64));
  auto map = ParseXRayInstrMap(bytes);
  if (map.ok())
    for (size_t id = 0; id <= map->names.size(); ++id) (void)map->Name(static_cast<int32_t>(id));
  XRayInstrMap names;
  names.names = {"main", "", "f"};
  auto trace = ImportXRayLog(bytes, &names);
  if (trace.ok()) (void)trace->EventCount();
  return 0;
}
