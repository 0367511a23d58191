// AtomicFile: every file TraceSmith writes on a user's behalf (exports,
// imports, rewritten traces) goes through it.
//
// The bytes go to a temporary file beside the target (".<name>.tmp-<pid>-
// XXXXXX", in the same directory so that rename() is atomic) and replace the
// target only in Commit(), when they are complete. So a failed, interrupted
// or killed writer never leaves a partial file under the target's name, and
// never truncates what is there: an input still being read (through mmap)
// stays whole until the rename, and survives entirely when the write fails.
//
// Only a missing target or a regular file is ever replaced (a symbolic link
// to a regular file replaces that file and keeps the link). A directory,
// device, FIFO, socket or dangling link is refused, never unlinked, and so is
// an output that is the same file (st_dev/st_ino: through symbolic and hard
// links too) as one of the writer's inputs.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tracesmith/base/status.h"

namespace tracesmith {

// OK when `target` may be written: it does not exist, or it is a regular
// file (or a link to one) that is none of `inputs`. InvalidArgument says why
// not. Commands call it before doing any work; AtomicFile::Create calls it too.
Status CheckOutputPath(const std::string& target, std::span<const std::string> inputs = {});

// The rule of every command and library call that writes a file (export,
// import, symbolize, profile; the Python package): CheckOutputPath, and an
// existing file is replaced only when `overwrite` is set, else
// FailedPrecondition "<out>: file exists (<how_to_overwrite>)".
Status CheckOutputFile(const std::string& out, std::span<const std::string> inputs, bool overwrite,
                       std::string_view how_to_overwrite = "use --force to overwrite");

// Creates a new, empty file ".<name>.<tag>-<pid>-XXXXXX" beside `path` (in
// its directory, O_EXCL, mode 0644 less the umask) and returns its name; its
// descriptor goes to *fd, or is closed when fd is null.
StatusOr<std::string> CreateFileBeside(const std::string& path, const char* tag, int* fd = nullptr);

// A file written whole through AtomicFile: `write` fills a stream opened on
// the temporary file; the target is replaced only when `write` returned OK
// and every byte reached the file. Returns the file's size in bytes.
StatusOr<uint64_t> WriteFileAtomically(const std::string& target,
                                       std::span<const std::string> inputs,
                                       const std::function<Status(std::ostream&)>& write);

class AtomicFile {
 public:
  // Creates the temporary file beside `target` (after CheckOutputPath). Its
  // mode is that of the file it replaces, or 0644 less the umask.
  static StatusOr<std::unique_ptr<AtomicFile>> Create(const std::string& target,
                                                      std::span<const std::string> inputs = {});
  // Discards the temporary file unless Commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // The temporary file's descriptor (-1 after CloseFd) and path. Writers that
  // open files by name (SQLite) close the descriptor and use the path.
  int fd() const { return fd_; }
  const std::string& temp_path() const { return temp_path_; }
  // The target as given, for messages.
  const std::string& target() const { return target_; }

  // Closes the descriptor; returns close()'s error. Idempotent.
  Status CloseFd();
  // Closes the descriptor and renames the temporary file over the target.
  // On failure the temporary file is removed and the target is untouched.
  // A target that did not exist at Create and exists now (another writer's:
  // two exports to one new -o) is left alone: FailedPrecondition, nothing
  // replaced.
  Status Commit();
  // Removes the temporary file (idempotent); the target is untouched.
  void Discard();

 private:
  AtomicFile(std::string target, std::string real_target, std::string temp_path, int fd,
             bool replacing);
  // Renames the temporary file to the target only while no file is there.
  Status RenameNoReplace();

  std::string target_;       // as given
  std::string real_target_;  // a symbolic link resolved: what rename() replaces
  std::string temp_path_;
  int fd_ = -1;
  int slot_ = -1;  // in the signal-cleanup registry
  bool done_ = false;
  bool replacing_ = false;  // the target existed at Create
};

// Makes SIGINT, SIGTERM and SIGHUP remove the temporary files of live
// AtomicFiles before the process dies of the signal (the handler then
// re-raises it with the default action). For programs (the CLI) only: a
// library must not take signals from its host. Call once, early.
void InstallTempFileCleanupOnSignals();

}  // namespace tracesmith
