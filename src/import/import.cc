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
  if (bytes >= (uint64_t{1} << 20)) return StrFormat("%.1f MiB", double(bytes) / (1 << 20));
  return StrFormat("%.1f KiB", double(bytes) / 1024);
}

// A file, gzip-compressed or not (zlib reads plain files as is), read in
// blocks with the decompressed size capped (MaxInputBytes): the format is
// told from the first block, so that something that is no trace at all
// (/dev/zero, a binary) is refused before it is read whole.
class Input {
 public:
  ~Input() {
    if (f_) gzclose(f_);
  }
  Status Open(const std::string& path, const ImportOptions& options) {
    path_ = path;
    struct stat st {};
    on_disk_ = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? uint64_t(st.st_size) : 0;
    limit_ = MaxInputBytes(options, on_disk_);
    f_ = gzopen(path.c_str(), "rb");
    if (f_ == nullptr)
      return IoError(StrFormat("cannot open %s: %s", path.c_str(), strerror(errno)));
    return OkStatus();
  }
  // Up to `cap` bytes; 0 at the end, or on an error (then error() is set).
  size_t Read(char* buf, size_t cap) {
    if (!error_.ok()) return 0;
    int n = gzread(f_, buf, unsigned(std::min<size_t>(cap, 1 << 30)));
    if (n < 0) {
      int err = 0;
      error_ = DataLoss(StrFormat("%s: decompression failed after %llu bytes: %s", path_.c_str(),
                                  static_cast<unsigned long long>(total_), gzerror(f_, &err)));
      return 0;
    }
    if (total_ + uint64_t(n) > limit_) {
      error_ = FailedPrecondition(StrFormat(
          "%s: decompresses to more than %s (%s on disk): not a trace, or a larger one than "
          "expected; raise the limit with --max-input-gb",
          path_.c_str(), Size(limit_).c_str(), Size(on_disk_).c_str()));
      return 0;
    }
    total_ += uint64_t(n);
    return size_t(n);
  }
  // Reads until `out` holds at least `n` bytes or the input ends.
  void ReadAtLeast(std::string* out, size_t n) {
    char buf[1 << 16];
    while (out->size() < n) {
      size_t got = Read(buf, sizeof buf);
      if (got == 0) return;
      out->append(buf, got);
    }
  }
  const Status& error() const { return error_; }

 private:
  std::string path_;
  gzFile f_ = nullptr;
  uint64_t on_disk_ = 0, limit_ = 0, total_ = 0;
  Status error_;
};

StatusOr<model::Trace> ImportFile(const std::string& path, const ImportOptions& options,
                                  ImportFormat* detected, ImportStats* stats) {
  Input in;
  RETURN_IF_ERROR(in.Open(path, options));
  std::string text;
  in.ReadAtLeast(&text, 64);
  if (!in.error().ok()) return in.error();
  auto format_or = DetectImportFormat(std::string_view(text).substr(0, 64));
  if (!format_or.ok())
    return Status(format_or.status().code(), path + ": " + format_or.status().message());
  const ImportFormat format = *format_or;
  if (detected) *detected = format;
  StatusOr<model::Trace> trace = InvalidArgument("unreachable");
  if (format == ImportFormat::kKinetoJson) {
    // Streamed: the bytes already read, then the rest as the parser asks.
    size_t given = 0;
    trace = ImportKinetoJsonStream(
        [&](char* buf, size_t cap) -> size_t {
          if (given < text.size()) {
            size_t n = std::min(cap, text.size() - given);
            std::memcpy(buf, text.data() + given, n);
            given += n;
            return n;
          }
          return in.Read(buf, cap);
        },
        stats);
    if (!in.error().ok()) return in.error();  // what cut the document short
  } else {
    in.ReadAtLeast(&text, SIZE_MAX);
    if (!in.error().ok()) return in.error();
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
