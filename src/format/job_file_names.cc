#include "tracesmith/format/job_file_names.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace tracesmith::format {

RunNameParts SplitRunName(const std::string& path) {
  RunNameParts p;
  const size_t slash = path.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  p.dir = path.substr(0, base);
  const size_t dot = path.rfind('.');
  // A dot at the start of the name (".hidden") is not an extension.
  if (dot != std::string::npos && dot > base) {
    p.stem = path.substr(base, dot - base);
    p.ext = path.substr(dot);
  } else {
    p.stem = path.substr(base);
  }
  return p;
}

std::string PerProcessOutputPath(const std::string& base, uint32_t pid, int rank) {
  const RunNameParts p = SplitRunName(base);
  if (rank >= 0) return p.dir + p.stem + ".rank" + std::to_string(rank) + p.ext;
  return p.dir + p.stem + ".pid" + std::to_string(pid) + p.ext;
}

std::optional<RunMember> ParseRunMember(std::string_view name, std::string_view stem,
                                        std::string_view ext) {
  if (name.size() <= stem.size() + ext.size() || !name.starts_with(stem) || !name.ends_with(ext))
    return std::nullopt;
  std::string_view tag = name.substr(stem.size(), name.size() - stem.size() - ext.size());
  RunMember m{RunMember::kRank, 0};
  if (tag.starts_with(".rank")) {
    tag.remove_prefix(5);
  } else if (tag.starts_with(".pid")) {
    m.kind = RunMember::kPid;
    tag.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  // Digits only, as PerProcessOutputPath writes them (std::to_string).
  if (tag.empty() || tag.size() > 19) return std::nullopt;
  for (char c : tag)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  std::from_chars(tag.data(), tag.data() + tag.size(), m.number);
  return m;
}

bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(uint8_t(a[i])) && std::isdigit(uint8_t(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(uint8_t(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(uint8_t(b[je]))) ++je;
      const std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
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

std::string CubinDirOf(const std::string& trace_path) { return trace_path + ".cubins"; }

std::string CubinFileName(uint64_t cubin_crc) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.cubin", static_cast<unsigned long long>(cubin_crc));
  return name;
}

}  // namespace tracesmith::format
