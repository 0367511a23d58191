// The model's source lines behind compiler-generated code (torch.compile,
// issue #41 item 1), as a trace carries them: one MetadataEntry per
// generated line that launches a kernel, written once the program has ended
// (symbolize/compiled_lines.h) and read by the call-site namer (analysis/).
//
//   key   "torch_compile.line:<generated file>:<line>"
//   value the model frames of that line's kernel, one per line of text,
//         "function\tfile\tline", outermost first; several stack traces (a
//         kernel fused from several lines) follow one another, separated by
//         an empty line.
//
// Text keeps the entry valid through merges (their strings are renumbered,
// not their contents) and readable by `tracesmith view --kind metadata`.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tracesmith::model {

inline constexpr std::string_view kCompiledLineKey = "torch_compile.line:";

struct ModelFrame {
  std::string function, file;
  uint32_t line = 0;
  bool operator==(const ModelFrame&) const = default;
};
// A stack trace of the model's code, outermost frame first.
using ModelStack = std::vector<ModelFrame>;

inline std::string CompiledLineKey(std::string_view generated_file, uint32_t line) {
  return std::string(kCompiledLineKey) + std::string(generated_file) + ":" + std::to_string(line);
}

inline std::string EncodeModelStacks(const std::vector<ModelStack>& stacks) {
  std::string out;
  for (const ModelStack& s : stacks) {
    if (!out.empty()) out += "\n";
    for (const ModelFrame& f : s)
      out += f.function + "\t" + f.file + "\t" + std::to_string(f.line) + "\n";
  }
  return out;
}

// The stacks of a value; a malformed line is skipped.
inline std::vector<ModelStack> DecodeModelStacks(std::string_view value) {
  std::vector<ModelStack> out(1);
  while (!value.empty()) {
    const size_t eol = value.find('\n');
    std::string_view line = value.substr(0, eol);
    value = eol == std::string_view::npos ? std::string_view() : value.substr(eol + 1);
    if (line.empty()) {
      if (!out.back().empty()) out.emplace_back();
      continue;
    }
    const size_t t1 = line.find('\t');
    const size_t t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string_view::npos) continue;
    ModelFrame f{std::string(line.substr(0, t1)), std::string(line.substr(t1 + 1, t2 - t1 - 1))};
    std::string_view n = line.substr(t2 + 1);
    if (std::from_chars(n.data(), n.data() + n.size(), f.line).ec != std::errc()) continue;
    out.back().push_back(std::move(f));
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

}  // namespace tracesmith::model
