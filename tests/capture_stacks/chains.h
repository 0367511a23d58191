// Known call chains for the unwinder tests: noinline, non-tail-recursive.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tracesmith/model/records.h"

namespace tracesmith::stacks::testing {

// Calls `leaf` from `depth` nested frames of RecurseChain.
int RecurseChain(int depth, const std::function<int()>& leaf);
// The same from frames compiled with frame pointers (fp_chain.cc).
int RecurseChainFp(int depth, const std::function<int()>& leaf);
// Calls `leaf` from test-binary frames -> TsLibRecurse (shared library,
// `lib_depth` + 1 frames) -> test-binary frames.
int ChainThroughLibrary(int lib_depth, const std::function<int()>& leaf);

// The frames' return addresses as stored (module-relative), innermost first: what two walks of
// one stack must agree on.
inline std::vector<uint64_t> RelPcs(const std::vector<model::Frame>& frames) {
  std::vector<uint64_t> out;
  for (const model::Frame& f : frames) out.push_back(f.rel_pc);
  return out;
}

#if defined(TS_TESTLIB_PATH)
}  // namespace tracesmith::stacks::testing
#include <gtest/gtest.h>  // (TempDir)
namespace tracesmith::stacks::testing {

// A library never loaded in this process: its return addresses have no rule yet.
class FreshLibrary {
 public:
  explicit FreshLibrary(const char* tag)
      : path_(::testing::TempDir() + "/libts_walk_" + tag + "_" + std::to_string(getpid()) +
              ".so") {
    std::filesystem::copy_file(TS_TESTLIB_PATH, path_,
                               std::filesystem::copy_options::overwrite_existing);
    handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_)
      recurse_ =
          reinterpret_cast<int (*)(int, int (*)(void*), void*)>(dlsym(handle_, "TsLibRecurse"));
  }
  ~FreshLibrary() {
    if (handle_) dlclose(handle_);
    std::filesystem::remove(path_);
  }
  bool ok() const { return recurse_ != nullptr; }
  const std::string& path() const { return path_; }
  // Calls fn through `depth` frames of the library.
  template <typename Fn>
  void Through(int depth, Fn fn) {
    recurse_(
        depth,
        [](void* a) {
          (*static_cast<Fn*>(a))();
          return 0;
        },
        &fn);
  }

 private:
  std::string path_;
  void* handle_ = nullptr;
  int (*recurse_)(int, int (*)(void*), void*) = nullptr;
};
#endif  // TS_TESTLIB_PATH

}  // namespace tracesmith::stacks::testing

extern "C" int TsLibRecurse(int depth, int (*cb)(void*), void* arg);
