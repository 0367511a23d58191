#include "huge_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace tracesmith::cli {
namespace {

// Set in the re-executed process: GLIBC_TUNABLES as the user had it, after a
// leading '=' (a bare "-" when it was unset).
constexpr const char* kSaved = "TRACESMITH_SAVED_GLIBC_TUNABLES";
constexpr const char* kTunable = "glibc.malloc.hugetlb=1";

std::string g_state = "not advised";

// The kernel's THP mode: "always", "madvise", "never", or "" when unknown.
std::string ThpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return line.substr(open + 1, close - open - 1);
}

}  // namespace

void UseHugePages(int argc, char** argv) {
  if (const char* saved = std::getenv(kSaved)) {
    // The re-executed process: glibc has read the tunable; give the user's
    // environment back.
    if (std::strcmp(saved, "-") == 0)
      unsetenv("GLIBC_TUNABLES");
    else
      setenv("GLIBC_TUNABLES", saved + 1, 1);
    unsetenv(kSaved);
    g_state = "advised (THP mode madvise; glibc.malloc.hugetlb=1)";
    return;
  }
  if (SanitizerOwnsMalloc()) {
    g_state = "not advised (sanitizer build: its allocator ignores glibc's tunables)";
    return;
  }
  const char* off = std::getenv("TRACESMITH_HUGE_PAGES");
  if (off != nullptr && std::strcmp(off, "0") == 0) {
    g_state = "not advised (TRACESMITH_HUGE_PAGES=0)";
    return;
  }
  const std::string mode = ThpMode();
  if (mode != "madvise") {
    g_state = mode == "always"
                  ? "always (THP mode always)"
                  : "not available (THP mode " + (mode.empty() ? "unknown" : mode) + ")";
    return;
  }
  const char* env = std::getenv("GLIBC_TUNABLES");
  const bool had = env != nullptr;
  const std::string tunables = had ? env : "";
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) {
    g_state = "as GLIBC_TUNABLES says (" + tunables + ")";
    return;
  }
  // `profile` and its alias `record` run the user's program: left as they are.
  if (argc > 1 && (std::strcmp(argv[1], "profile") == 0 || std::strcmp(argv[1], "record") == 0))
    return;
  const std::string saved = had ? "=" + tunables : "-";
  const std::string with = tunables.empty() ? kTunable : tunables + ":" + kTunable;
  setenv(kSaved, saved.c_str(), 1);
  setenv("GLIBC_TUNABLES", with.c_str(), 1);
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc, say): run on as we are.
  if (had)
    setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  else
    unsetenv("GLIBC_TUNABLES");
  unsetenv(kSaved);
  g_state = "not advised (re-exec failed)";
}

std::string HugePagesLine() { return "transparent huge pages: " + g_state; }

}  // namespace tracesmith::cli
