#include "tracesmith/session/run_outputs.h"
#include "tracesmith/base/file_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "tracesmith/base/atomic_file.h"
#include "tracesmith/format/job_file_names.h"

namespace tracesmith::session {

std::vector<std::string> FindOutputs(const std::string& output, time_t since) {
  std::vector<std::string> files;
  const bool named = PathExists(output);
  if (named) files.push_back(output);
  // The inverse of PerProcessOutputPath (format/job_file_names.h).
  const format::RunNameParts parts = format::SplitRunName(output);
  DIR* d = opendir(parts.dir.empty() ? "." : parts.dir.c_str());
  if (!d) return files;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!format::ParseRunMember(name, parts.stem, parts.ext)) continue;
    const std::string path = parts.dir + name;
    struct stat sb;
    if (::stat(path.c_str(), &sb) == 0 && sb.st_mtime >= since) files.push_back(path);
  }
  closedir(d);
  // The named file first, then the other processes' files in name order.
  std::sort(files.begin() + (named ? 1 : 0), files.end(),
            [](const std::string& a, const std::string& b) { return format::NaturalLess(a, b); });
  return files;
}

StatusOr<PreviousTrace> PreviousTrace::SetAside(const std::string& path) {
  PreviousTrace p;
  if (!PathExists(path)) return p;
  // A fresh unique name beside `path`; rename() replaces that empty file.
  ASSIGN_OR_RETURN(std::string aside, CreateFileBeside(path, "old"));
  if (::rename(path.c_str(), aside.c_str()) != 0) {
    Status st = IoError(StrFormat("cannot set the previous %s aside as %s: %s", path.c_str(),
                                  aside.c_str(), std::strerror(errno)));
    ::unlink(aside.c_str());
    return st;
  }
  p.path_ = path;
  p.aside_ = aside;
  return p;
}

PreviousTrace::PreviousTrace(PreviousTrace&& other) noexcept
    : path_(std::move(other.path_)), aside_(std::exchange(other.aside_, std::string())) {}

PreviousTrace& PreviousTrace::operator=(PreviousTrace&& other) noexcept {
  if (this != &other) {
    (void)Settle();
    path_ = std::move(other.path_);
    aside_ = std::exchange(other.aside_, std::string());
  }
  return *this;
}

PreviousTrace::~PreviousTrace() { (void)Settle(); }

StatusOr<bool> PreviousTrace::Settle() {
  if (aside_.empty()) return false;
  const std::string aside = std::exchange(aside_, std::string());
  // link() never replaces: a FILE written by the run wins.
  if (::link(aside.c_str(), path_.c_str()) == 0) {
    ::unlink(aside.c_str());
    return true;
  }
  if (errno == EEXIST || PathExists(path_)) {  // the new trace replaces the old one
    ::unlink(aside.c_str());
    return false;
  }
  if (::rename(aside.c_str(), path_.c_str()) == 0) return true;  // no hard links here
  return IoError(StrFormat("the previous %s is kept as %s (%s)", path_.c_str(), aside.c_str(),
                           std::strerror(errno)));
}

}  // namespace tracesmith::session
