#include "tracesmith/capture/gpu_claim.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <mutex>
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

// The held claims' fds (+1; 0: a free slot). A forked child shares each lock's
// open file description, which would keep the lock after the parent lets go:
// the child closes them all at fork (closing there leaves the parent's lock).
// g_mu keeps a fork out of a claim's taking and giving back (the fork waits
// for it: pthread_atfork), so no locked fd is ever outside the table; the
// generation tells a child's inherited GpuClaim objects from its own.
constexpr int kSlots = 64;
std::atomic<int> g_fds[kSlots];
std::mutex g_mu;
std::atomic<uint32_t> g_generation{0};

void BeforeFork() { g_mu.lock(); }
void AfterForkInParent() { g_mu.unlock(); }
void AfterForkInChild() {
  g_mu.unlock();
  for (std::atomic<int>& f : g_fds)
    if (const int v = f.exchange(0)) close(v - 1);
  g_generation.fetch_add(1);
}

// (caller holds g_mu)
int Register(int fd) {
  for (int i = 0; i < kSlots; ++i) {
    int free_slot = 0;
    if (g_fds[i].compare_exchange_strong(free_slot, fd + 1)) return i;
  }
  return -1;
}

// The lock file, opened without following a link: a name planted in a shared
// /tmp as a link (or a hard link) to another file is not ours to write. -1
// where none can be used; `writable` false for another user's file.
int OpenLockFile(const std::string& path, bool* writable) {
  *writable = true;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0 && errno == EACCES) {
    *writable = false;  // another user's file: flock needs no write access
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  }
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    close(fd);
    return -1;
  }
  if (*writable) fchmod(fd, 0666);  // another user's capture may take it later (umask)
  return fd;
}

}  // namespace

std::unique_ptr<GpuClaim> GpuClaim::Take(std::string_view feature, std::string_view gpu_key,
                                         std::string* why) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(&BeforeFork, &AfterForkInParent, &AfterForkInChild); });
  const std::string path = LockPath(feature, gpu_key);
  std::lock_guard<std::mutex> lock(g_mu);
  bool writable = true;
  const int fd = OpenLockFile(path, &writable);
  if (fd < 0) return std::unique_ptr<GpuClaim>(new GpuClaim(-1));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = err == EWOULDBLOCK ? pread(fd, buf, sizeof buf - 1, 0) : 0;
    close(fd);
    // A file system without flock: granted unchecked, as without a file.
    if (err != EWOULDBLOCK) return std::unique_ptr<GpuClaim>(new GpuClaim(-1));
    const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    if (why)
      *why = (pid > 0 ? "another process (pid " + std::to_string(pid) + ")"
                      : std::string("another process")) +
             " holds " + std::string(feature) + " on this GPU (" + path + ")";
    return nullptr;
  }
  // The holder's pid, for the message of the next one (a read-only holder
  // clears nothing: the pid there is then a previous holder's).
  if (writable) {
    const std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
  }
  const int slot = Register(fd);
  if (slot < 0) {  // more claims than slots: not kept across a fork, so not taken
    close(fd);
    return std::unique_ptr<GpuClaim>(new GpuClaim(-1));
  }
  return std::unique_ptr<GpuClaim>(new GpuClaim(slot, g_generation.load()));
}

GpuClaim::~GpuClaim() {
  if (slot_ < 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  // A claim inherited through a fork is no claim here: its slot may hold one
  // the child took since.
  if (generation_ != g_generation.load()) return;
  if (const int v = g_fds[slot_].exchange(0)) close(v - 1);  // releases the flock
}

}  // namespace tracesmith::capture
