// Python frames under an embedded interpreter, loaded with dlopen so that
// nothing here links against Python (as in production).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tracesmith/capture/stacks/stack_collector.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
// The embedded interpreter is never finalized: its memory is not a leak.
#define TS_LSAN_DISABLE() __lsan_disable()
#define TS_LSAN_ENABLE() __lsan_enable()
#else
#define TS_LSAN_DISABLE()
#define TS_LSAN_ENABLE()
#endif

namespace {
tracesmith::capture::stacks::StackCollector* g_collector = nullptr;
std::vector<uint32_t> g_ids;
}  // namespace

// Called from Python through ctypes: PyDLL keeps the GIL, CDLL releases it
// (as Triton's launchers do before cuLaunchKernel).
extern "C" [[gnu::visibility("default"), gnu::noinline]] int TsTestCaptureForPython() {
  g_ids.push_back(g_collector->CaptureStack());
  return 0;
}

namespace tracesmith::capture::stacks {
namespace {

// Line numbers below refer to this script.
constexpr const char* kScript =
    "import ctypes\n"                                        // 1
    "held = ctypes.PyDLL(None).TsTestCaptureForPython\n"     // 2
    "released = ctypes.CDLL(None).TsTestCaptureForPython\n"  // 3
    "def inner(fn):\n"                                       // 4
    "    return fn()\n"                                      // 5
    "def outer(fn):\n"                                       // 6
    "    return inner(fn)\n"                                 // 7
    "outer(released)\n"                                      // 8
    "outer(held)\n"                                          // 9
    "outer(released)\n";                                     // 10

class EmbeddedPython {
 public:
  // TS_TEST_LIBPYTHON in the environment picks another interpreter (e.g.
  // the GPU machine's 3.12; set PYTHONHOME to its prefix if it is not /usr).
  EmbeddedPython() {
    const char* path = std::getenv("TS_TEST_LIBPYTHON");
#ifdef TS_TEST_LIBPYTHON
    if (!path) path = TS_TEST_LIBPYTHON;
#endif
    if (!path) return;
    handle_ = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!handle_) return;
    {
      auto init = reinterpret_cast<void (*)(int)>(dlsym(handle_, "Py_InitializeEx"));
      run_ = reinterpret_cast<int (*)(const char*)>(dlsym(handle_, "PyRun_SimpleString"));
      if (init && run_) {
        TS_LSAN_DISABLE();
        init(0);
        TS_LSAN_ENABLE();
      }
    }
  }
  bool ok() const { return run_ != nullptr; }
  int Run(const char* code) {
    TS_LSAN_DISABLE();
    int rc = run_(code);
    TS_LSAN_ENABLE();
    return rc;
  }
  const char* version() const {
    auto v = reinterpret_cast<const char* (*)()>(dlsym(handle_, "Py_GetVersion"));
    return v ? v() : "?";
  }

 private:
  void* handle_ = nullptr;
  int (*run_)(const char*) = nullptr;
};

struct PyFrameView {
  std::string function, file;
  uint32_t line;
};

// The stack as (native | python) entries, innermost first.
std::vector<PyFrameView> Describe(StackCollector& c, uint32_t stack_id,
                                  std::vector<bool>* is_python) {
  std::vector<PyFrameView> out;
  for (uint32_t fid : c.FrameIdsOf(stack_id)) {
    model::Frame f = c.FramesOf(stack_id)[out.size()];
    is_python->push_back(f.kind == model::kFramePython);
    auto [fn, file] = c.PythonFrameStrings(fid);
    out.push_back({fn, file, f.line});
  }
  return out;
}

TEST(PythonFramesTest, MixedStacksUnderEmbeddedInterpreter) {
  static EmbeddedPython python;  // one interpreter per process
  if (!python.ok()) GTEST_SKIP() << "libpython not available: Python frame walking not tested";
  std::printf("[ INFO     ] embedded %s\n", python.version());
  StackCollectorOptions options;
  options.mode = StackMode::kMixed;
  StackCollector c(options);
  EXPECT_EQ(DefaultStackMode(), StackMode::kMixed);
  g_collector = &c;
  g_ids.clear();
  ASSERT_EQ(python.Run(kScript), 0);
  ASSERT_EQ(g_ids.size(), 3u);

  // GIL released (1st, 3rd call; also before any GIL-held call) and held
  // (2nd): Python frames merged in place of the eval-loop frame.
  for (int call : {0, 1, 2}) {
    SCOPED_TRACE("call " + std::to_string(call));
    std::vector<bool> is_py;
    std::vector<PyFrameView> frames = Describe(c, g_ids[call], &is_py);
    std::vector<PyFrameView> py;
    int first_py = -1, last_py = -1;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (!is_py[i]) continue;
      if (first_py < 0) first_py = int(i);
      last_py = int(i);
      py.push_back(frames[i]);
    }
    ASSERT_EQ(py.size(), 3u);
    EXPECT_EQ(last_py - first_py, 2);            // one contiguous segment
    EXPECT_GT(first_py, 0);                      // native frames inside (ctypes, this test) ...
    EXPECT_LT(last_py + 1, int(frames.size()));  // ... and outside (PyRun, gtest, main)
    EXPECT_EQ(py[0].function, "inner");
    EXPECT_EQ(py[0].line, 5u);
    EXPECT_EQ(py[1].function, "outer");
    EXPECT_EQ(py[1].line, 7u);
    EXPECT_EQ(py[2].function, "<module>");
    EXPECT_EQ(py[2].line, 8u + call);
    EXPECT_EQ(py[0].file, "<string>");
  }

  // Python-only mode: just the three Python frames.
  StackCollectorOptions py_only;
  py_only.mode = StackMode::kPython;
  StackCollector p(py_only);
  g_collector = &p;
  g_ids.clear();
  ASSERT_EQ(python.Run("outer(released)\nouter(held)\n"), 0);
  ASSERT_EQ(g_ids.size(), 2u);
  for (uint32_t id : g_ids) {
    std::vector<bool> is_py;
    std::vector<PyFrameView> frames = Describe(p, id, &is_py);
    ASSERT_EQ(frames.size(), 3u);
    for (bool b : is_py) EXPECT_TRUE(b);
    EXPECT_EQ(frames[2].line, id == g_ids[0] ? 1u : 2u);
  }
  EXPECT_EQ(g_ids[0] == g_ids[1], false);
  g_collector = nullptr;
}

}  // namespace
}  // namespace tracesmith::capture::stacks
