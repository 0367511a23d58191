#include "tracesmith/base/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>  // renameat2, RENAME_NOREPLACE
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tracesmith {
namespace {

// Temporary files a signal handler may have to remove. Fixed storage and
// lock-free flags: the handler only reads them (async-signal-safe). 16 slots:
// a command writes one or two files at a time; more are simply not cleaned
// on a signal.
constexpr int kSlots = 16;
constexpr int kFree = 0, kFilling = 1, kLive = 2;
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
Slot g_slots[kSlots];

int Register(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(kLive, std::memory_order_release);
    return i;
  }
  return -1;
}

void Unregister(int slot) {
  if (slot >= 0) g_slots[slot].state.store(kFree, std::memory_order_release);
}

void RemoveTempFilesAndDie(int sig) {
  for (Slot& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == kLive) ::unlink(s.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns (the signal is blocked until then)
}

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Six characters of [A-Za-z0-9], different on every call.
std::string RandomSuffix() {
  static std::atomic<uint64_t> counter{0};
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(ts.tv_sec) << 30) ^
               (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull) ^
               (static_cast<uint64_t>(::getpid()) << 40);
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  for (int i = 0; i < 6; ++i) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    out.push_back(kChars[x % 62]);
  }
  return out;
}

}  // namespace

Status CheckOutputPath(const std::string& target, std::span<const std::string> inputs) {
  if (target.empty()) return InvalidArgument("the output file name is empty");
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) {
    // Nothing there (or an unusable directory: creating the file says why).
    return OkStatus();
  }
  if (S_ISLNK(st.st_mode) && ::stat(target.c_str(), &st) != 0)
    return InvalidArgument(StrFormat(
        "output %s is a symbolic link to nothing (%s): refusing to write through it; name a "
        "file to write",
        target.c_str(), std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return InvalidArgument(
        StrFormat("output %s is %s: refusing to replace it; name a file to write", target.c_str(),
                  FileKind(st.st_mode)));
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino)
      return InvalidArgument(StrFormat(
          "output %s is the input %s (the same file): refusing to overwrite the input; choose "
          "another output name",
          target.c_str(), input.c_str()));
  }
  return OkStatus();
}

Status CheckOutputFile(const std::string& out, std::span<const std::string> inputs, bool overwrite,
                       std::string_view how_to_overwrite) {
  RETURN_IF_ERROR(CheckOutputPath(out, inputs));
  struct stat st {};
  if (!overwrite && ::stat(out.c_str(), &st) == 0)
    return FailedPrecondition(out + ": file exists (" + std::string(how_to_overwrite) + ")");
  return OkStatus();
}

StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& target,
                                                         std::span<const std::string> inputs) {
  RETURN_IF_ERROR(CheckOutputPath(target, inputs));
  std::string real = target;
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char* resolved = ::realpath(target.c_str(), nullptr);
    if (resolved == nullptr)
      return IoError(StrFormat("cannot resolve the symbolic link %s: %s", target.c_str(),
                               std::strerror(errno)));
    real = resolved;
    std::free(resolved);
  }
  const bool replacing = ::stat(real.c_str(), &st) == 0;
  int fd = -1;
  ASSIGN_OR_RETURN(std::string temp, CreateFileBeside(real, "tmp", &fd));
  if (replacing) (void)::fchmod(fd, st.st_mode & 07777);
  return std::unique_ptr<AtomicFile>(new AtomicFile(target, real, std::move(temp), fd, replacing));
}

StatusOr<std::string> CreateFileBeside(const std::string& path, const char* tag, int* fd_out) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..")
    return InvalidArgument(StrFormat("output %s names a directory, not a file", path.c_str()));
  if (base.size() > 200) base.resize(200);  // room for the suffix within NAME_MAX (255)
  const std::string prefix = dir + "." + base + "." + tag + "-" + std::to_string(::getpid()) + "-";
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = prefix + RandomSuffix();
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      if (fd_out != nullptr)
        *fd_out = fd;
      else
        ::close(fd);
      return name;
    }
    if (errno != EEXIST)
      return IoError(StrFormat("cannot create %s (a temporary file beside %s): %s", name.c_str(),
                               path.c_str(), std::strerror(errno)));
  }
  return IoError(
      StrFormat("cannot create a temporary file beside %s: 100 names taken", path.c_str()));
}

AtomicFile::AtomicFile(std::string target, std::string real_target, std::string temp_path, int fd,
                       bool replacing)
    : target_(std::move(target)),
      real_target_(std::move(real_target)),
      temp_path_(std::move(temp_path)),
      fd_(fd),
      replacing_(replacing) {
  slot_ = Register(temp_path_);
}

AtomicFile::~AtomicFile() { Discard(); }

Status AtomicFile::CloseFd() {
  if (fd_ < 0) return OkStatus();
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0)
    return IoError(
        StrFormat("writing %s failed on close: %s", target_.c_str(), std::strerror(errno)));
  return OkStatus();
}

Status AtomicFile::Commit() {
  if (done_) return FailedPrecondition(target_ + ": already committed or discarded");
  Status closed = CloseFd();
  if (!closed.ok()) {
    Discard();
    return closed;
  }
  if (!replacing_) {
    Status st = RenameNoReplace();
    if (!st.ok()) {
      Discard();
      return st;
    }
  } else if (::rename(temp_path_.c_str(), real_target_.c_str()) != 0) {
    Status st = IoError(StrFormat("cannot rename %s to %s: %s", temp_path_.c_str(),
                                  real_target_.c_str(), std::strerror(errno)));
    Discard();
    return st;
  }
  Unregister(slot_);
  slot_ = -1;
  done_ = true;
  return OkStatus();
}

Status AtomicFile::RenameNoReplace() {
  const auto appeared = [&] {
    return FailedPrecondition(
        StrFormat("%s: file exists: another program created it while this one was writing it; "
                  "left as it is (run again with --force to replace it)",
                  target_.c_str()));
  };
  if (::renameat2(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, real_target_.c_str(), RENAME_NOREPLACE) ==
      0)
    return OkStatus();
  if (errno == EEXIST) return appeared();
  if (errno != EINVAL && errno != ENOSYS)
    return IoError(StrFormat("cannot rename %s to %s: %s", temp_path_.c_str(), real_target_.c_str(),
                             std::strerror(errno)));
  // A file system without RENAME_NOREPLACE: link() also refuses an existing
  // name, atomically; then the temporary name goes.
  if (::link(temp_path_.c_str(), real_target_.c_str()) == 0) {
    ::unlink(temp_path_.c_str());
    return OkStatus();
  }
  if (errno == EEXIST) return appeared();
  // Neither (no hard links either): check, then rename (a window remains).
  struct stat st {};
  if (::lstat(real_target_.c_str(), &st) == 0) return appeared();
  if (::rename(temp_path_.c_str(), real_target_.c_str()) == 0) return OkStatus();
  return IoError(StrFormat("cannot rename %s to %s: %s", temp_path_.c_str(), real_target_.c_str(),
                           std::strerror(errno)));
}

void AtomicFile::Discard() {
  if (done_) return;
  (void)CloseFd();
  ::unlink(temp_path_.c_str());
  Unregister(slot_);
  slot_ = -1;
  done_ = true;
}

void InstallTempFileCleanupOnSignals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL)
      continue;  // kept: nohup's SIG_IGN
    struct sigaction sa {};
    sa.sa_handler = RemoveTempFilesAndDie;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

StatusOr<uint64_t> WriteFileAtomically(const std::string& target,
                                       std::span<const std::string> inputs,
                                       const std::function<Status(std::ostream&)>& write) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> dest, AtomicFile::Create(target, inputs));
  RETURN_IF_ERROR(dest->CloseFd());
  std::ofstream file(dest->temp_path(), std::ios::trunc | std::ios::binary);
  if (!file) return IoError(dest->temp_path() + ": cannot open for writing");
  RETURN_IF_ERROR(write(file));
  file.close();
  if (!file) return IoError(target + ": write failed");
  std::error_code ec;
  const uint64_t bytes = std::filesystem::file_size(dest->temp_path(), ec);
  if (ec) return IoError(dest->temp_path() + ": " + ec.message());
  RETURN_IF_ERROR(dest->Commit());
  return bytes;
}

}  // namespace tracesmith
