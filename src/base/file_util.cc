#include "tracesmith/base/file_util.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tracesmith {

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

StatusOr<uint64_t> FileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotFound(path + ": " + std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteStringToFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot create: " + std::strerror(errno));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) return IoError(path + ": write failed");
  return OkStatus();
}

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? StrFormat("%llu B", static_cast<unsigned long long>(bytes))
                : StrFormat("%.2f %s", v, kUnits[u]);
}

std::string HumanDuration(uint64_t ns) {
  if (ns < 1000) return StrFormat("%llu ns", static_cast<unsigned long long>(ns));
  if (ns < 1000000) return StrFormat("%.3f us", ns / 1e3);
  if (ns < 1000000000) return StrFormat("%.3f ms", ns / 1e6);
  return StrFormat("%.3f s", ns / 1e9);
}

}  // namespace tracesmith

namespace tracesmith {

StatusOr<uint64_t> ParseDuration(const std::string& text) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    return InvalidArgument("'" + text + "' is not a duration (examples: 1500, 2.5us, 20ms, 1s)");
  }
  std::string unit = text.substr(pos);
  double scale = 0;
  if (unit.empty() || unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  if (scale == 0 || !(v >= 0) || !std::isfinite(v))  // negative, NaN, infinite
    return InvalidArgument("'" + text + "' is not a duration (examples: 1500, 2.5us, 20ms, 1s)");
  if (v * scale >= 0x1p64)  // past what 64 bits of nanoseconds hold (584 years)
    return InvalidArgument("'" + text + "' is too long a duration (at most 584 years)");
  return static_cast<uint64_t>(v * scale + 0.5);
}

}  // namespace tracesmith
