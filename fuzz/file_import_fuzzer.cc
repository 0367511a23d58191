// libFuzzer target: ImportFile, the path `tracesmith import` takes — the
// input as a file (a memfd), gzip or not, told apart from its first bytes,
// decompressed in blocks under the size limit and streamed into the Kineto
// importer or read whole for XRay. The other importer fuzzers start past
// zlib and detection; this one starts at the file (hostile gzip streams:
// cut, junk after the header, members that inflate far past their size).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tracesmith/import/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracesmith::importer;
  static const int fd = memfd_create("file_import_fuzzer", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) return 0;
  ImportOptions options;
  options.max_input_bytes = 64u << 20;  // a bomb stops here, not at the default 1 GiB
  ImportStats stats;
  auto trace = ImportFile("/proc/self/fd/" + std::to_string(fd), options, nullptr, &stats);
  if (trace.ok()) (void)trace->EventCount();
  return 0;
}
