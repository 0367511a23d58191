#include "proc_maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace tracesmith::stacks {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool MapsScanner::Feed(const char* data, size_t n) {
  for (size_t i = 0; i < n && !done_; ++i) {
    const char c = data[i];
    if (c == '\n') {
      EndLine();
      continue;
    }
    if (bad_) continue;
    if (field_ <= 1) {  // start-end, in hex
      int v = HexValue(c);
      uintptr_t& x = field_ == 0 ? start_ : end_;
      if (v >= 0 && x >> (sizeof(uintptr_t) * 8 - 4) == 0) {
        x = x << 4 | uintptr_t(v);
      } else if (field_ == 0 && c == '-') {
        field_ = 1;
      } else if (field_ == 1 && c == ' ') {
        field_ = 2;
      } else {
        bad_ = true;
      }
    } else if (field_ < kNameField) {  // perms, offset, dev, inode
      if (c == ' ') ++field_;
    } else if (c != ' ' || name_len_ > 0) {  // the name, after padding
      if (name_len_ < kNameKept) name_[name_len_] = c;
      ++name_len_;
    }
  }
  return done_;
}

void MapsScanner::EndLine() {
  if (!bad_ && field_ >= 2 && start_ < end_) {
    if (addr_ >= start_ && addr_ < end_) {
      found_.start = start_;
      found_.end = end_;
      found_.below = prev_end_;
      // Exactly "[stack]": before Linux 4.5 other threads' stacks were
      // named "[stack:TID]".
      static constexpr char kStack[] = "[stack]";
      found_.main_stack = name_len_ == sizeof(kStack) - 1;
      for (size_t i = 0; found_.main_stack && i < name_len_; ++i)
        found_.main_stack = name_[i] == kStack[i];
      done_ = true;
      return;
    }
    prev_end_ = end_;
  }
  field_ = 0;
  bad_ = false;
  start_ = end_ = 0;
  name_len_ = 0;
}

bool FindMappingOf(uintptr_t addr, MappingOf* out) {
  const int saved_errno = errno;  // a signal handler's caller keeps its errno
  int fd;
  do {
    fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  bool found = false;
  if (fd >= 0) {
    // 4 KiB: this may run on a small thread stack; a large process's maps
    // (a few hundred KiB) are then some tens of reads, once per thread.
    char buf[4096];
    MapsScanner scanner(addr);
    for (;;) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (scanner.Feed(buf, size_t(n))) break;
    }
    close(fd);
    found = scanner.found();
    if (found) *out = scanner.mapping();
  }
  errno = saved_errno;
  return found;
}

}  // namespace tracesmith::stacks
