// OutputFile: buffered writes to a file, optionally through gzip (zlib).
// Exporters produce many small pieces; one 1 MiB buffer turns them into few
// write() calls. Errors are sticky and reported by Commit().
//
// The bytes go to a temporary file beside the target (base/atomic_file.h)
// that Commit() renames into place: an export that fails or is interrupted
// leaves the target as it was, and no partial file.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/status.h"

namespace tracesmith::exporter {

class OutputFile {
 public:
  // Refuses (InvalidArgument) a `path` that is not a regular file or is one of `inputs`.
  static StatusOr<std::unique_ptr<OutputFile>> Open(const std::string& path, bool gzip,
                                                    std::span<const std::string> inputs = {});
  // Without a successful Commit() the temporary file is removed.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void Write(const void* data, size_t n) {
    if (buf_.size() + n > kBufferBytes) FlushBuffer();
    if (n >= kBufferBytes / 8) {  // large pieces skip the copy into the buffer
      FlushBuffer();
      WriteThrough(data, n);
      return;
    }
    const auto* p = static_cast<const uint8_t*>(data);
    buf_.insert(buf_.end(), p, p + n);
  }
  void Write(std::string_view s) { Write(s.data(), s.size()); }
  // Bytes handed to Write so far (uncompressed).
  uint64_t written() const { return written_ + buf_.size(); }
  // Flushes, closes and renames the file into place; returns the first
  // error (then the target is left as it was). Idempotent.
  Status Commit();
  // Size of the file on disk after Commit().
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  static constexpr size_t kBufferBytes = 1 << 20;
  OutputFile(std::unique_ptr<AtomicFile> file, void* gz);
  void FlushBuffer();
  void WriteThrough(const void* data, size_t n);

  std::unique_ptr<AtomicFile> file_;
  std::string path_;
  int fd_ = -1;
  void* gz_ = nullptr;  // gzFile when compressing
  std::vector<uint8_t> buf_;
  uint64_t written_ = 0;
  uint64_t file_bytes_ = 0;
  Status status_;
  bool closed_ = false;
};

}  // namespace tracesmith::exporter
