// Format detection and file reading for the importers.
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
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

uint64_t MaxInputBytes(const ImportOptions& options, uint64_t file_bytes) {
  if (options.max_input_bytes) return options.max_input_bytes;
  return std::max<uint64_t>(uint64_t{1} << 30, 100 * file_bytes);
}

static std::string Size(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) return StrFormat("%.1f GiB", double(bytes) / (1 << 30));
  return StrFormat("%.1f MiB", double(bytes) / (1 << 20));
}

// Reads a whole file; gzip streams are decompressed (zlib reads plain files
// as is). The format is told from the first block, so that something that
// is no trace at all (/dev/zero, a binary) is refused before it is read
// whole, and the decompressed size is capped (MaxInputBytes).
static StatusOr<std::string> ReadMaybeGzip(const std::string& path, const ImportOptions& options,
                                           ImportFormat* format) {
  struct stat st {};
  const uint64_t on_disk =
      ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? uint64_t(st.st_size) : 0;
  const uint64_t limit = MaxInputBytes(options, on_disk);
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return IoError(StrFormat("cannot open %s: %s", path.c_str(), strerror(errno)));
  std::string out;
  char buf[1 << 16];
  bool known = false;
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
    if (out.size() + size_t(n) > limit) {
      gzclose(f);
      return FailedPrecondition(StrFormat(
          "%s: decompresses to more than %s (%s on disk): not a trace, or a larger one than "
          "expected; raise the limit with --max-input-gb",
          path.c_str(), Size(limit).c_str(), Size(on_disk).c_str()));
    }
    out.append(buf, static_cast<size_t>(n));
    if (!known && out.size() >= 64) {
      auto f_or = DetectImportFormat(std::string_view(out).substr(0, 64));
      if (!f_or.ok()) {
        gzclose(f);
        return Status(f_or.status().code(), path + ": " + f_or.status().message());
      }
      *format = *f_or;
      known = true;
    }
  }
  gzclose(f);
  if (!known) {  // shorter than 64 bytes
    auto f_or = DetectImportFormat(out);
    if (!f_or.ok()) return Status(f_or.status().code(), path + ": " + f_or.status().message());
    *format = *f_or;
  }
  return out;
}

StatusOr<model::Trace> ImportFile(const std::string& path, const ImportOptions& options,
                                  ImportFormat* detected, ImportStats* stats) {
  ImportFormat format = ImportFormat::kKinetoJson;
  ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path, options, &format));
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
