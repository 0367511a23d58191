// Format detection and file reading for the importers.
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "tracesmith/import/import.h"
#include "tracesmith/import/xray.h"

namespace tracesmith::importer {

// An XRay file header starts u16 version (1-5 so far), u16 type (0 basic, 1 FDR).
static bool LooksLikeXRay(std::string_view head, uint16_t* type) {
  if (head.size() < 4) return false;
  const auto b = [&](size_t i) { return static_cast<uint8_t>(head[i]); };
  const uint16_t version = b(0) | b(1) << 8;
  *type = static_cast<uint16_t>(b(2) | b(3) << 8);
  return version >= 1 && version <= 5 && *type <= 1;
}

StatusOr<ImportFormat> DetectImportFormat(std::string_view head) {
  uint16_t xray_type = 0;
  if (LooksLikeXRay(head, &xray_type)) {
    if (head.size() < 32)
      return DataLoss(
          StrFormat("XRay log header cut short (32 bytes needed, %zu present)", head.size()));
    return xray_type == 0 ? ImportFormat::kXRayBasic : ImportFormat::kXRayFdr;
  }
  size_t i = 0;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
    ++i;
  if (i < head.size() && head[i] == '{') return ImportFormat::kKinetoJson;
  return InvalidArgument(
      "unrecognised trace format (expected torch.profiler / Kineto JSON, plain or gzip, or an "
      "LLVM XRay log)");
}

const char* ImportFormatName(ImportFormat format) {
  switch (format) {
    case ImportFormat::kKinetoJson:
      return "kineto-json";
    case ImportFormat::kXRayBasic:
      return "xray-basic";
    case ImportFormat::kXRayFdr:
      return "xray-fdr";
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

StatusOr<model::Trace> ImportFile(const std::string& path, const ImportOptions& options,
                                  ImportFormat* detected, ImportStats* stats) {
  ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path));
  auto format_or = DetectImportFormat(std::string_view(text).substr(0, 64));
  if (!format_or.ok())
    return Status(format_or.status().code(), path + ": " + format_or.status().message());
  const ImportFormat format = *format_or;
  if (detected) *detected = format;
  StatusOr<model::Trace> trace = InvalidArgument("unreachable");
  if (format == ImportFormat::kKinetoJson) {
    trace = ImportKinetoJson(text, stats);
  } else {
    XRayInstrMap map;
    if (!options.xray_binary.empty()) {
      ASSIGN_OR_RETURN(map, LoadXRayInstrMap(options.xray_binary));
    }
    trace = ImportXRayLog(text, options.xray_binary.empty() ? nullptr : &map, stats);
  }
  if (!trace.ok()) return Status(trace.status().code(), path + ": " + trace.status().message());
  return trace;
}

}  // namespace tracesmith::importer
