#include "tracesmith/capture/run_outputs.h"
#include "tracesmith/base/file_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "tracesmith/base/atomic_file.h"

namespace tracesmith::capture {
namespace {

// Numbers as numbers: rank2 before rank10.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(uint8_t(a[i])) && std::isdigit(uint8_t(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(uint8_t(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(uint8_t(b[je]))) ++je;
      const std::string_view na(a.data() + i, ie - i), nb(b.data() + j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();  // no leading zeros in pids
      if (na != nb) return na < nb;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<std::string> FindOutputs(const std::string& output, time_t since) {
  std::vector<std::string> files;
  const bool named = PathExists(output);
  if (named) files.push_back(output);
  std::string dir = ".", base = output;
  if (size_t slash = output.rfind('/'); slash != std::string::npos) {
    dir = output.substr(0, slash);
    base = output.substr(slash + 1);
  }
  // The inverse of PerProcessOutputPath: <stem>.pid<N><ext>, <stem>.rank<N><ext>.
  std::string stem = base, ext;
  if (size_t dot = base.rfind('.'); dot != std::string::npos && dot > 0) {
    stem = base.substr(0, dot);
    ext = base.substr(dot);
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return files;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    for (const char* tag : {".pid", ".rank"}) {
      std::string prefix = stem + tag;
      if (name.size() <= prefix.size() + ext.size() || name.rfind(prefix, 0) != 0) continue;
      if (name.compare(name.size() - ext.size(), ext.size(), ext) != 0) continue;
      std::string path = dir + "/" + name;
      struct stat sb;
      if (::stat(path.c_str(), &sb) == 0 && sb.st_mtime >= since) files.push_back(path);
    }
  }
  closedir(d);
  // The named file first, then the other processes' files in name order.
  std::sort(files.begin() + (named ? 1 : 0), files.end(), NaturalLess);
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

}  // namespace tracesmith::capture
