// Python frames under an embedded interpreter, loaded with dlopen so that
// nothing here links against Python (as in production).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "chains.h"
#include "tracesmith/model/records.h"
#include "tracesmith/stacks/stack_collector.h"

#if defined(__SANITIZE_ADDRESS__)  // (PRESET_FLAGS: this binary's units are instrumented)
#include <sanitizer/lsan_interface.h>
// The embedded interpreter is never finalized: its memory is not a leak.
#define TS_LSAN_DISABLE() __lsan_disable()
#define TS_LSAN_ENABLE() __lsan_enable()
#else
#define TS_LSAN_DISABLE()
#define TS_LSAN_ENABLE()
#endif

namespace {
tracesmith::stacks::StackCollector* g_collector = nullptr;
std::vector<uint32_t> g_ids;
// TsTestNextCollector's: the collector captures go to next, and one whose walks the writer
// finishes first.
tracesmith::stacks::StackCollector* g_next = nullptr;
}  // namespace

// Called from Python through ctypes: PyDLL keeps the GIL, CDLL releases it
// (as Triton's launchers do before cuLaunchKernel).
extern "C" [[gnu::visibility("default"), gnu::noinline]] int TsTestCaptureForPython() {
  g_ids.push_back(g_collector->CaptureStack());
  return 0;
}

// The writer's poll for the current collector, then the next one captures (ctypes).
extern "C" [[gnu::visibility("default"), gnu::noinline]] int TsTestNextCollector() {
  g_collector->ResolveDeferred();
  std::swap(g_collector, g_next);
  return 0;
}

namespace tracesmith::stacks {
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

EmbeddedPython& Interpreter() {
  static EmbeddedPython python;  // one interpreter per process
  return python;
}

// The script's three stacks under `mode`, each as (frames, is_python).
struct ScriptStack {
  std::vector<PyFrameView> frames;
  std::vector<bool> is_py;
  int first_py = -1, last_py = -1, n_py = 0;
};
std::vector<ScriptStack> RunScript(StackCollector& c) {
  g_collector = &c;
  g_ids.clear();
  EXPECT_EQ(Interpreter().Run(kScript), 0);
  g_collector = nullptr;
  std::vector<ScriptStack> out;
  for (uint32_t id : g_ids) {
    ScriptStack s;
    s.frames = Describe(c, id, &s.is_py);
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (!s.is_py[i]) continue;
      if (s.first_py < 0) s.first_py = int(i);
      s.last_py = int(i);
      ++s.n_py;
    }
    out.push_back(std::move(s));
  }
  return out;
}

// inner:5 <- outer:7 <- <module>:8+call, contiguous from first_py.
void ExpectScriptFrames(const ScriptStack& s, int call) {
  ASSERT_EQ(s.n_py, 3);
  EXPECT_EQ(s.last_py - s.first_py, 2);  // one contiguous segment
  EXPECT_GT(s.first_py, 0);              // native frames inside (ctypes, this test)
  const PyFrameView* py = &s.frames[size_t(s.first_py)];
  EXPECT_EQ(py[0].function, "inner");
  EXPECT_EQ(py[0].line, 5u);
  EXPECT_EQ(py[1].function, "outer");
  EXPECT_EQ(py[1].line, 7u);
  EXPECT_EQ(py[2].function, "<module>");
  EXPECT_EQ(py[2].line, 8u + unsigned(call));
  EXPECT_EQ(py[0].file, "<string>");
}

TEST(PythonFramesTest, MixedStacksUnderEmbeddedInterpreter) {
  EmbeddedPython& python = Interpreter();
  if (!python.ok()) GTEST_SKIP() << "libpython not available: Python frame walking not tested";
  std::printf("[ INFO     ] embedded %s\n", python.version());
  StackCollectorOptions options;
  options.mode = StackMode::kMixed;
  StackCollector c(options);
  EXPECT_EQ(DefaultStackMode(), StackMode::kMixed);
  options.mode = StackMode::kFull;
  StackCollector full(options);
  // Full first: its memo entries (same first states) must not shorten or
  // lengthen the mixed walks that replay them, nor the other way round.
  std::vector<ScriptStack> full_stacks = RunScript(full);
  std::vector<ScriptStack> mixed = RunScript(c);
  std::vector<ScriptStack> full_again = RunScript(full);
  ASSERT_EQ(mixed.size(), 3u);
  ASSERT_EQ(full_stacks.size(), 3u);
  ASSERT_EQ(full_again.size(), 3u);

  // GIL released (1st, 3rd call; also before any GIL-held call) and held
  // (2nd).
  for (int call : {0, 1, 2}) {
    SCOPED_TRACE("call " + std::to_string(call));
    // Mixed: the native frames end at the innermost eval loop, which all
    // the Python frames replace; they are the stack's outermost frames.
    ExpectScriptFrames(mixed[size_t(call)], call);
    EXPECT_EQ(mixed[size_t(call)].last_py + 1, int(mixed[size_t(call)].frames.size()));
    // Full: the Python frames in place of the eval-loop frame, between the
    // native frames inside and outside (PyRun, gtest, main).
    for (const auto* f : {&full_stacks, &full_again}) {
      const ScriptStack& s = (*f)[size_t(call)];
      ExpectScriptFrames(s, call);
      EXPECT_LT(s.last_py + 1, int(s.frames.size()));
      // The same native frames below the Python frames as mixed.
      EXPECT_EQ(s.first_py, mixed[size_t(call)].first_py);
    }
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

// Deferred interning under Python (the capture's setting): every new stack gets a provisional
// id. Captured with the GIL held, its new code objects get one reference each (kept: a code
// object the writer has yet to describe must not be freed) and the writer describes them, here
// after the script that made them is gone; captured without the GIL, its new Python frames are
// described on the thread and the text queued.
TEST(PythonFramesTest, DeferredStacksPinTheirCodeObjectsAndAreDescribedLater) {
  EmbeddedPython& python = Interpreter();
  if (!python.ok()) GTEST_SKIP() << "libpython not available: Python frame walking not tested";
  StackCollectorOptions options;
  options.mode = StackMode::kMixed;
  options.defer_interning = true;
  StackCollector c(options);
  g_collector = &c;
  g_ids.clear();
  ASSERT_EQ(python.Run("import ctypes, sys\n"                                   // 1
                       "held = ctypes.PyDLL(None).TsTestCaptureForPython\n"     // 2
                       "released = ctypes.CDLL(None).TsTestCaptureForPython\n"  // 3
                       "ns = {}\n"                                              // 4
                       "exec(compile('def dynamic(fn):\\n    return fn()\\n', '<dynamic>', "
                       "'exec'), ns)\n"                                // 5
                       "code = ns['dynamic'].__code__\n"               // 6
                       "before = sys.getrefcount(code)\n"              // 7
                       "ns['dynamic'](held)\n"                         // 8
                       "assert sys.getrefcount(code) == before + 1\n"  // 9
                       "ns['dynamic'](held)\n"                         // 10
                       "assert sys.getrefcount(code) == before + 1\n"  // 11
                       "ns['dynamic'](released)\n"                     // 12
                       "del ns, code\n"                                // 13
                       "ns2 = {}\n"                                    // 14
                       "exec(compile('def other(fn):\\n    return fn()\\n', '<other>', "
                       "'exec'), ns2)\n"           // 15
                       "ns2['other'](released)\n"  // 16
                       "del ns2\n"),               // 17
            0);
  g_collector = nullptr;
  ASSERT_EQ(g_ids.size(), 4u);
  for (uint32_t id : g_ids) EXPECT_GE(id, model::kProvisionalStackId);
  StackCollectorStats s = c.stats();
  EXPECT_EQ(s.deferred, 4u);
  EXPECT_EQ(s.pinned_code_objects, 2u);  // dynamic, and the script's <module>
  // Without the GIL, only the frames not seen before: <module> at line 12 (dynamic's return is
  // the first call's), then other's and <module> at line 16 (other's code object is freed
  // before the writer runs: only the queued text names it).
  EXPECT_EQ(s.described_without_gil, 3u);
  c.ResolveDeferred();  // the script's code is gone but for its pin
  EXPECT_EQ(c.stats().python_frames_from_text, 3u);
  {
    std::vector<bool> is_py;
    std::vector<PyFrameView> frames = Describe(c, c.Settled(g_ids[3]), &is_py);
    ASSERT_GE(frames.size(), 2u);
    EXPECT_EQ(frames[frames.size() - 2].function, "other");
    EXPECT_EQ(frames[frames.size() - 2].file, "<other>");
    EXPECT_EQ(frames[frames.size() - 2].line, 2u);
    EXPECT_EQ(frames.back().line, 16u);
  }
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    std::vector<bool> is_py;
    std::vector<PyFrameView> frames = Describe(c, c.Settled(g_ids[size_t(call)]), &is_py);
    ASSERT_GE(frames.size(), 2u);
    const PyFrameView& dynamic = frames[frames.size() - 2];
    const PyFrameView& module = frames.back();
    EXPECT_EQ(dynamic.function, "dynamic");
    EXPECT_EQ(dynamic.file, "<dynamic>");
    EXPECT_EQ(dynamic.line, 2u);
    EXPECT_EQ(module.function, "<module>");
    EXPECT_EQ(module.line, 8u + 2u * unsigned(call));
  }
}

// A mixed walk handed to the writer at a new return address (a library no walk has seen,
// between the capture and the innermost eval loop): finished from the copy and merged with the
// Python frames as on the thread, its Python frames described on the thread (ctypes.CDLL
// releases the GIL). With max_depth 8 the native frames fill the stack and the Python frames
// are left out: their descriptions are interned all the same (a later stack may name them).
TEST(PythonFramesTest, AMixedWalkHandedOffIsTheWalkOnTheThread) {
  EmbeddedPython& python = Interpreter();
  if (!python.ok()) GTEST_SKIP() << "libpython not available: Python frame walking not tested";
  for (int depth : {256, 8}) {
    SCOPED_TRACE("max_depth " + std::to_string(depth));
    testing::FreshLibrary lib(depth == 256 ? "pywalk" : "pywalk8");
    ASSERT_TRUE(lib.ok()) << dlerror();
    StackCollectorOptions options;
    options.mode = StackMode::kMixed;
    options.max_depth = depth;
    options.defer_interning = true;
    StackCollector deferred(options);
    options.defer_interning = false;
    StackCollector direct(options);
    g_collector = &deferred;
    g_next = &direct;
    g_ids.clear();
    const std::string script =
        "import ctypes\n"
        "lib = ctypes.CDLL('" +
        lib.path() +
        "')\n"
        "lib.TsLibRecurse.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]\n"
        "cap = ctypes.cast(ctypes.CDLL(None).TsTestCaptureForPython, ctypes.c_void_p)\n"
        "nxt = ctypes.CDLL(None).TsTestNextCollector\n"
        "def inner():\n"
        "    return lib.TsLibRecurse(4, cap, None)\n"
        "def outer():\n"
        "    return inner()\n"
        "for i in range(2):\n"
        "    outer()\n"
        "    nxt()\n";
    ASSERT_EQ(python.Run(script.c_str()), 0);
    g_collector = g_next = nullptr;
    ASSERT_EQ(g_ids.size(), 2u);
    const StackCollectorStats s = deferred.stats();
    EXPECT_EQ(s.walks_deferred, 1u);
    EXPECT_EQ(s.walks_cut, 0u);
    ASSERT_GE(g_ids[0], model::kProvisionalStackId);
    const uint32_t id = deferred.Settled(g_ids[0]);
    ASSERT_LT(id, model::kProvisionalStackId);
    std::vector<bool> py_a, py_b;
    const std::vector<PyFrameView> a = Describe(deferred, id, &py_a);
    const std::vector<PyFrameView> b = Describe(direct, g_ids[1], &py_b);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(py_a, py_b);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].function, b[i].function) << i;
      EXPECT_EQ(a[i].file, b[i].file) << i;
      EXPECT_EQ(a[i].line, b[i].line) << i;
    }
    EXPECT_EQ(testing::RelPcs(deferred.FramesOf(id)), testing::RelPcs(direct.FramesOf(g_ids[1])));
    const int python_frames = int(std::count(py_a.begin(), py_a.end(), true));
    if (depth == 256) {
      EXPECT_EQ(python_frames, 3);  // inner, outer, <module>
    } else {
      EXPECT_EQ(python_frames, 0);
      EXPECT_EQ(a.size(), 8u);
    }
    // Described on the thread (no GIL) and interned from that text, in the stack or not.
    EXPECT_EQ(s.described_without_gil, 3u);
    EXPECT_EQ(deferred.stats().python_frames_from_text, 3u);
  }
}

// An interpreter loaded while another thread captures mixed stacks (a
// program that embeds Python after its capture started): the first Reload
// that finds it fills in the layout, the C API pointers and the eval loop's
// range while the capturing thread's walks run and ask Top() for Python
// frames. Run under ThreadSanitizer (label tsan): the walks must read none of
// it before it is published (present_, release). Meaningful as the first
// test of its process (ctest runs each alone).
TEST(PythonFramesTest, InterpreterFoundWhileAnotherThreadCaptures) {
  StackCollectorOptions mixed;
  mixed.mode = StackMode::kMixed;
  StackCollector c(mixed);
  (void)c.CaptureStack();  // the process-wide PythonFrames exists, maybe without Python
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> walks{0};
  std::thread capturing([&] {
    while (!stop.load()) {
      EXPECT_NE(c.CaptureStack(), 0u);
      walks.fetch_add(1);
    }
  });
  while (walks.load() == 0) std::this_thread::yield();
  const bool ok = Interpreter().ok();
  const StackMode mode = ok ? DefaultStackMode() : StackMode::kNone;  // Reload: found now
  const uint64_t at_reload = walks.load();
  while (walks.load() < at_reload + 100) std::this_thread::yield();
  stop.store(true);
  capturing.join();
  if (!ok) GTEST_SKIP() << "libpython not available";
  EXPECT_EQ(mode, StackMode::kMixed);
}

}  // namespace
}  // namespace tracesmith::stacks
