#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tracesmith::exporter {

StatusOr<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path, bool gzip) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(StrFormat("cannot create %s: %s", path.c_str(), strerror(errno)));
  void* gz = nullptr;
  if (gzip) {
    int dup_fd = ::dup(fd);  // gzclose closes its descriptor; keep ours for fstat
    gz = gzdopen(dup_fd, "wb6");
    if (gz == nullptr) {
      ::close(dup_fd);
      ::close(fd);
      return IoError(StrFormat("cannot start gzip stream on %s", path.c_str()));
    }
    gzbuffer(static_cast<gzFile>(gz), 1 << 18);
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, fd, gz));
}

OutputFile::OutputFile(std::string path, int fd, void* gz)
    : path_(std::move(path)), fd_(fd), gz_(gz) {
  buf_.reserve(kBufferBytes);
}

OutputFile::~OutputFile() { (void)Close(); }

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

Status OutputFile::Close() {
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
  if (::close(fd_) != 0 && status_.ok())
    status_ = IoError(StrFormat("closing %s failed: %s", path_.c_str(), strerror(errno)));
  fd_ = -1;
  return status_;
}

}  // namespace tracesmith::exporter
