#include "tracesmith/cluster/job_files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "tracesmith/format/job_file_names.h"

namespace tracesmith::cluster {
namespace {

struct Found {
  std::string path;
  int group = 1;  // 0: rank file, 1: no rank or pid in the name, 2: pid file
  uint64_t number = 0;
};

// What a file's own name says about it: "x.rank3.sbt" is rank 3 of run x.
Found Classify(const std::string& path) {
  Found f{path};
  const format::RunNameParts parts = format::SplitRunName(path);
  const size_t dot = parts.stem.rfind('.');
  if (dot == std::string::npos || dot == 0) return f;
  const std::string name = parts.stem + parts.ext;
  if (auto m =
          format::ParseRunMember(name, std::string_view(parts.stem).substr(0, dot), parts.ext)) {
    f.group = m->kind == format::RunMember::kRank ? 0 : 2;
    f.number = m->number;
  }
  return f;
}

bool Before(const Found& a, const Found& b) {
  if (a.group != b.group) return a.group < b.group;
  if (a.number != b.number) return a.number < b.number;
  return format::NaturalLess(a.path, b.path);
}

std::string Where(const std::string& dir) {
  if (dir.empty()) return "the current directory";
  return dir.size() == 1 ? dir : dir.substr(0, dir.size() - 1);  // "/" stays
}

// The names in directory `dir` ("" for "."), sorted.
StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  DIR* d = opendir(dir.empty() ? "." : dir.c_str());
  if (!d)
    return IoError(
        StrFormat("cannot read directory %s: %s", Where(dir).c_str(), std::strerror(errno)));
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) names.push_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool IsRegularFile(const std::string& path) {
  struct stat sb;
  return ::stat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode);
}

Status AddDirectory(std::string dir, std::vector<Found>* out) {
  if (!dir.ends_with('/')) dir += '/';
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(dir));
  size_t before = out->size();
  for (const std::string& name : names)
    if (!name.starts_with('.') && name.ends_with(".sbt") && IsRegularFile(dir + name))
      out->push_back(Classify(dir + name));
  if (out->size() == before)
    return NotFound(StrFormat("no trace in directory %s (it holds no .sbt file)",
                              dir.substr(0, dir.size() - 1).c_str()));
  return OkStatus();
}

// `arg` as the output name of a capture: itself and its processes' files.
Status AddStem(const std::string& arg, std::vector<Found>* out,
               std::vector<std::string>* expanded) {
  const format::RunNameParts parts = format::SplitRunName(arg);
  const bool exists = IsRegularFile(arg);
  if (exists) out->push_back(Classify(arg));
  std::vector<std::string> names;
  if (auto listed = ListDirectory(parts.dir); listed.ok()) names = std::move(*listed);
  size_t members = 0;
  for (const std::string& name : names) {
    auto m = format::ParseRunMember(name, parts.stem, parts.ext);
    if (!m || !IsRegularFile(parts.dir + name)) continue;
    out->push_back(Found{parts.dir + name, m->kind == format::RunMember::kRank ? 0 : 2, m->number});
    ++members;
  }
  if (!exists && members == 0) {
    struct stat sb;
    if (::stat(arg.c_str(), &sb) == 0)
      return InvalidArgument(arg + ": not a trace file or a directory");
    return NotFound(StrFormat("no trace matches '%s': looked for %s%s, %s.rank*%s, %s.pid*%s in %s",
                              arg.c_str(), parts.stem.c_str(), parts.ext.c_str(),
                              parts.stem.c_str(), parts.ext.c_str(), parts.stem.c_str(),
                              parts.ext.c_str(), Where(parts.dir).c_str()));
  }
  if (exists && members > 0) expanded->push_back(arg);
  return OkStatus();
}

}  // namespace

StatusOr<RunFiles> ResolveRun(std::span<const std::string> args, bool single_file) {
  if (args.empty()) return InvalidArgument("no trace given");
  if (single_file) {
    if (args.size() != 1)
      return InvalidArgument(StrFormat("--single reads one file; %zu were given", args.size()));
    if (!IsRegularFile(args[0]))
      return NotFound(args[0] + ": no such file (--single reads the file named, not a run)");
    return RunFiles{{args[0]}, {}};
  }
  std::vector<Found> found;
  RunFiles run;
  for (const std::string& arg : args) {
    if (arg.empty()) return InvalidArgument("an empty trace name was given");
    struct stat sb;
    if (::stat(arg.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode)) {
      RETURN_IF_ERROR(AddDirectory(arg, &found));
    } else {
      RETURN_IF_ERROR(AddStem(arg, &found, &run.expanded));
    }
  }
  // The same file through two arguments (or two links) is read once, under
  // the name it was first given.
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<Found> unique;
  for (Found& f : found) {
    struct stat sb;
    if (::stat(f.path.c_str(), &sb) == 0 && !seen.insert({sb.st_dev, sb.st_ino}).second) continue;
    unique.push_back(std::move(f));
  }
  std::stable_sort(unique.begin(), unique.end(), Before);
  for (Found& f : unique) run.files.push_back(std::move(f.path));
  return run;
}

}  // namespace tracesmith::cluster
