#include "tracesmith/capture/gpu_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace tracesmith::capture {
namespace {

// A file name of letters, digits, '-' and '_' only.
std::string Sanitized(std::string_view s) {
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-') ? ch : '_';
  return out;
}

std::string LockPath(std::string_view feature, std::string_view gpu_key) {
  const char* dir = std::getenv("TRACESMITH_LOCK_DIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/tracesmith-" + Sanitized(feature) + "-" +
         Sanitized(gpu_key) + ".lock";
}

}  // namespace

std::unique_ptr<GpuClaim> GpuClaim::Take(std::string_view feature, std::string_view gpu_key,
                                         std::string* why) {
  const std::string path = LockPath(feature, gpu_key);
  bool writable = true;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0) {
    fchmod(fd, 0666);  // another user's capture may take it later (umask)
  } else {
    writable = false;  // another user's file: flock needs no write access
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return std::unique_ptr<GpuClaim>(new GpuClaim(-1));
  int rc;
  do rc = flock(fd, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    char buf[32] = {};
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    close(fd);
    if (why)
      *why = (pid > 0 ? "another process (pid " + std::to_string(pid) + ")"
                      : std::string("another process")) +
             " holds " + std::string(feature) + " on this GPU (" + path + ")";
    return nullptr;
  }
  if (writable) {
    const std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
  }
  return std::unique_ptr<GpuClaim>(new GpuClaim(fd));
}

GpuClaim::~GpuClaim() {
  if (fd_ >= 0) close(fd_);  // releases the flock
}

}  // namespace tracesmith::capture
