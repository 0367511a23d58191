#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tracesmith::exporter {

StatusOr<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path, bool gzip,
                                                       std::span<const std::string> inputs) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path, inputs));
  void* gz = nullptr;
  if (gzip) {
    int dup_fd = ::dup(file->fd());  // gzclose closes its descriptor; keep ours for fstat
    gz = dup_fd < 0 ? nullptr : gzdopen(dup_fd, "wb6");
    if (gz == nullptr) {
      if (dup_fd >= 0) ::close(dup_fd);
      return IoError(StrFormat("cannot start gzip stream on %s", path.c_str()));
    }
    gzbuffer(static_cast<gzFile>(gz), 1 << 18);
  }
  return std::unique_ptr<OutputFile>(new OutputFile(std::move(file), gz));
}

OutputFile::OutputFile(std::unique_ptr<AtomicFile> file, void* gz)
    : file_(std::move(file)), path_(file_->target()), fd_(file_->fd()), gz_(gz) {
  buf_.reserve(kBufferBytes);
}

// Not committed: the gzip stream is dropped and the temporary file removed.
OutputFile::~OutputFile() {
  if (closed_) return;
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  file_->Discard();
}

void OutputFile::WriteThrough(const void* data, size_t n) {
  if (!status_.ok()) return;
  written_ += n;
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    if (gz_ != nullptr) {
      unsigned piece = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
      int w = gzwrite(static_cast<gzFile>(gz_), p, piece);
      if (w <= 0) {
        int err = 0;
        status_ = IoError(StrFormat("gzip write to %s failed: %s", path_.c_str(),
                                    gzerror(static_cast<gzFile>(gz_), &err)));
        return;
      }
      p += w;
      n -= static_cast<size_t>(w);
    } else {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        status_ = IoError(StrFormat("write to %s failed: %s", path_.c_str(), strerror(errno)));
        return;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
}

void OutputFile::FlushBuffer() {
  if (buf_.empty()) return;
  std::vector<uint8_t> pending;
  pending.swap(buf_);
  WriteThrough(pending.data(), pending.size());
  pending.clear();
  buf_.swap(pending);
}

Status OutputFile::Commit() {
  if (closed_) return status_;
  closed_ = true;
  FlushBuffer();
  if (gz_ != nullptr) {
    int rc = gzclose(static_cast<gzFile>(gz_));
    if (rc != Z_OK && status_.ok())
      status_ =
          IoError(StrFormat("finishing gzip stream of %s failed (zlib %d)", path_.c_str(), rc));
    gz_ = nullptr;
  }
  struct stat st {};
  if (::fstat(fd_, &st) == 0) file_bytes_ = static_cast<uint64_t>(st.st_size);
  fd_ = -1;
  if (status_.ok()) status_ = file_->Commit();
  file_->Discard();  // after an error: no partial file (a no-op once committed)
  return status_;
}

}  // namespace tracesmith::exporter
