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

#include "tracesmith/analysis/report.h"
#include "tracesmith/base/pattern.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

// The autograd engine's worker loop: launches and allocations below it run
// backward.
inline constexpr std::string_view kAutogradThread = "torch::autograd::Engine::thread_main";

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
