// Names the code behind a launch from its host stack, as its author would
// name it: the innermost Python line when there is one, and when that line
// is in an installed package or the standard library, the program's own
// innermost line before it ("forward (model.py:57) > Linear.forward
// (torch/nn/modules/linear.py:134)": the program's file by its name, library
// paths from the package down); on the autograd
// engine's backward thread (no Python frames) the autograd node that ran
// ("autograd backward: MmBackward0"); otherwise the innermost native frame
// outside the CUDA runtime, the CUDA libraries and the C/C++ runtime (so a C++
// program's launches are attributed to its own function, e.g. `main`, not
// to cudart's internals). A frame without a symbol reads "module+0xoffset".
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/pattern.h"
#include "tracesmith/base/status.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

// The autograd engine's worker loop: launches and allocations below it run
// backward.
inline constexpr std::string_view kAutogradThread = "torch::autograd::Engine::thread_main";

// How launches are attributed to code ("Kernel GPU time by launch call
// site"): the innermost Python line; on the autograd engine's thread the
// autograd node; else the innermost native frame outside these modules and
// functions (the CUDA runtime and libraries, libc, libstdc++).
struct CallSiteRules {
  // ECMAScript regexes. Frames whose module file name matches `skip_modules`,
  // or whose function name matches `skip_functions`, are never the call site.
  std::string skip_modules =
      R"(^(libcudart|libcuda|libcupti|libcublas|libcublasLt|libcudnn[\w]*|libnccl|libnvrtc|)"
      R"(libnvJitLink|libcufft|libcurand|libcusparse|libcusolver|libc|libm|libstdc\+\+|libgcc_s|)"
      R"(libpthread|ld-linux[-\w]*)\.so)";
  // CUDA runtime and driver API entry points by their families (so a user's
  // own cudaCheck() or cuFoo() is not taken for one), cudart's internals,
  // nvcc's launch stubs and the C start-up.
  std::string skip_functions =
      R"(^(libcudart_static_|__device_stub__|_start$|__libc_start|)"
      R"(cuda(Launch|Memcpy|Memset|Malloc|Free|Graph|Stream|Event|Device|Func|Occupancy|Peer|)"
      R"(Host|Mem|Import|External|Get|Set|Profiler|Array|Texture|Surface|Thread|Ctx|Library|)"
      R"(Kernel|User)|)"
      R"(cu(Launch|Memcpy|Memset|Mem|Graph|Stream|Event|Ctx|Module|Func|Device|Init|Get|Link|)"
      R"(Library|Kernel|Array|Tex|Surf|Occupancy|Pointer|Profiler|Ipc|External|Import)))";
  // Python files of installed packages and of the standard library: when
  // the innermost Python frame of a launch is in one of them, its call site
  // also names the innermost frame outside them (the program's own line),
  // "forward (model.py:57) > Linear.forward (torch/nn/modules/linear.py:134)",
  // and such paths are shown from the package down.
  std::string library_files =
      R"((/site-packages/|/dist-packages/|/lib(64)?/python3\.[0-9]+/|^<frozen ))";
  // Python code a compiler generated (torch.compile: Inductor's output code
  // in its cache, `/tmp/torchinductor_<user>/...`, and the launchers it
  // builds from strings, "<string>"; FX graph code, "<eval_with_key>.N"): a
  // launch through it is named by the program's line that called the
  // compiled code, then the generated line that launched the kernel
  // (issue #41 item 1): "train_step (train.py:41) > Runner.call
  // (torchinductor_u/rk/crk7….py:1915)".
  // Inductor's files are named "c" and a hash (`rk/crk7zj6r…py`); a frame
  // from a string counts only beside such a file (call_site.cc).
  std::string generated_files =
      R"((/(torchinductor_[^/]*|inductor_cache)/([^/]+/)*c[a-z0-9]{20,}\.py$|)"
      R"(^<string>$|^<eval_with_key>))";
};

// InvalidArgument naming the rule whose regex does not compile.
Status ValidateCallSiteRules(const CallSiteRules& rules);

// ".../lib/python3.12/site-packages/torch/nn/modules/linear.py" ->
// "torch/nn/modules/linear.py"; the standard library's from its directory;
// any other path as it is.
std::string PackagePath(std::string_view path);

class CallSiteNamer {
 public:
  explicit CallSiteNamer(const model::Trace& meta, const CallSiteRules& rules = {});
  // "(no stack)" for stack id 0. `unnamed` (optional) is set when the name
  // is a native frame without a symbol ("module+0xoffset": the trace was not
  // symbolized, or the module was not found when it was).
  std::string Name(uint32_t stack_id, bool* unnamed = nullptr);

 private:
  // kKeptTwice: kept by the rule and by the compiled files (GeneratedFile).
  enum : int8_t { kUnknown = 0, kKeep = 1, kSkip = 2, kKeptTwice = 3 };
  bool Skipped(uint32_t frame_id);
  // Whether the frame's file matches `rule`, remembered per frame in `memo`.
  bool FileMatches(std::vector<int8_t>& memo, const Pattern& rule, uint32_t frame_id);
  bool LibraryFile(uint32_t frame_id);    // a Python frame in a package or the stdlib
  bool GeneratedFile(uint32_t frame_id);  // a Python frame in compiler-generated code
  // The name of a launch through generated code ("" when the stack has none,
  // or the program's own line is nearer the launch than any generated frame).
  std::string ThroughGeneratedCode(const std::vector<uint32_t>& frames);
  // file_name_only: a file outside the libraries by its name alone.
  std::string FrameText(uint32_t frame_id, bool file_name_only = false);
  std::string ModuleName(uint32_t mapping_id) const;

  const model::Trace& meta_;
  Pattern skip_modules_, skip_functions_, library_files_, generated_files_;
  std::vector<int8_t> skip_;               // per frame id - 1
  std::vector<int8_t> library_;            // per frame id - 1 (kKeep: the program's)
  std::vector<int8_t> generated_;          // per frame id - 1 (kSkip: generated code)
  std::vector<std::string> module_names_;  // per mapping id (file names)
  // torch.compile's model lines (model/compiled_lines.h): "generated
  // file:line" -> the model's code as named ("forward (model.py:17)").
  std::map<std::string, std::string, std::less<>> model_lines_;
  // The generated files model_lines_ names (wherever Inductor's cache is).
  std::set<std::string, std::less<>> compiled_files_;
  // The model's line behind a generated frame, "" when the trace has none.
  std::string ModelLine(uint32_t frame_id);
};

}  // namespace tracesmith::analysis
