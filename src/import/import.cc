// Format detection and file reading for the importers.
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "tracesmith/import/import.h"

namespace tracesmith::importer {

StatusOr<ImportFormat> DetectImportFormat(std::string_view head) {
  size_t i = 0;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
    ++i;
  if (i < head.size() && head[i] == '{') return ImportFormat::kKinetoJson;
  return InvalidArgument(
      "unrecognised trace format (expected torch.profiler / Kineto JSON, plain or gzip)");
}

const char* ImportFormatName(ImportFormat format) {
  switch (format) {
    case ImportFormat::kKinetoJson:
      return "kineto-json";
  }
  return "?";
}

// Reads a whole file; gzip streams are decompressed (zlib reads plain files as is).
static StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return IoError(StrFormat("cannot open %s: %s", path.c_str(), strerror(errno)));
  std::string out;
  char buf[1 << 16];
  while (true) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      return DataLoss(StrFormat("%s: decompression failed after %zu bytes: %s", path.c_str(),
                                out.size(), msg.c_str()));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  gzclose(f);
  return out;
}

StatusOr<model::Trace> ImportFile(const std::string& path, ImportFormat* detected,
                                  ImportStats* stats) {
  ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path));
  ASSIGN_OR_RETURN(ImportFormat format, DetectImportFormat(std::string_view(text).substr(0, 64)));
  if (detected) *detected = format;
  auto trace = ImportKinetoJson(text, stats);
  if (!trace.ok()) return Status(trace.status().code(), path + ": " + trace.status().message());
  return trace;
}

}  // namespace tracesmith::importer
