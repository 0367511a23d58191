// The model's source lines behind compiler-generated code (torch.compile,
// issue #41 item 1), as a trace carries them: one MetadataEntry per
// generated line that launches a kernel, written once the program has ended
// (symbolize/compiled_lines.h) and read by the call-site namer (analysis/).
//
//   key   "torch_compile.line:<generated file>:<line>"
//   value the model frames of that line's kernel, one per line of text,
//         "function\tfile\tline", outermost first; several stack traces (a
//         kernel fused from several lines) follow one another, separated by
//         an empty line; then, when Inductor named them, one line
//         "#nodes name name ..." with the graph's nodes the kernel came from
//         (Dynamo's names: "linear", "gelu", "multi_head_attention_forward";
//         what is left to say where the model is torch.nn's own code, of
//         which Dynamo records no lines).
//
// Text keeps the entry valid through merges (their strings are renumbered,
// not their contents) and readable by `tracesmith view --kind metadata`.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/model/trace.h"

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

// What a trace knows of one generated line.
struct CompiledLine {
  std::vector<ModelStack> stacks;
  std::vector<std::string> nodes;  // the graph's nodes, Dynamo's names
  bool operator==(const CompiledLine&) const = default;
};

inline std::string EncodeCompiledLine(const CompiledLine& c) {
  std::string out;
  for (const ModelStack& s : c.stacks) {
    if (!out.empty()) out += "\n";
    for (const ModelFrame& f : s)
      out += f.function + "\t" + f.file + "\t" + std::to_string(f.line) + "\n";
  }
  if (!c.nodes.empty()) {
    if (!out.empty()) out += "\n";
    out += "#nodes";
    for (const std::string& n : c.nodes) out += " " + n;
    out += "\n";
  }
  return out;
}

// A value's stacks and nodes; a malformed line is skipped.
inline CompiledLine DecodeCompiledLine(std::string_view value) {
  CompiledLine out;
  out.stacks.emplace_back();
  while (!value.empty()) {
    const size_t eol = value.find('\n');
    std::string_view line = value.substr(0, eol);
    value = eol == std::string_view::npos ? std::string_view() : value.substr(eol + 1);
    if (line.empty()) {
      if (!out.stacks.back().empty()) out.stacks.emplace_back();
      continue;
    }
    if (line.starts_with("#nodes")) {
      for (line.remove_prefix(6); !line.empty();) {
        const size_t sp = line.find(' ');
        if (sp != 0) out.nodes.emplace_back(line.substr(0, sp));
        line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
      }
      continue;
    }
    const size_t t1 = line.find('\t');
    const size_t t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string_view::npos) continue;
    ModelFrame f{std::string(line.substr(0, t1)), std::string(line.substr(t1 + 1, t2 - t1 - 1))};
    std::string_view n = line.substr(t2 + 1);
    if (std::from_chars(n.data(), n.data() + n.size(), f.line).ec != std::errc()) continue;
    out.stacks.back().push_back(std::move(f));
  }
  if (out.stacks.back().empty()) out.stacks.pop_back();
  return out;
}

// Every entry of `t`, by "generated file:line" (the key without its prefix).
inline std::map<std::string, CompiledLine, std::less<>> CompiledLines(const Trace& t) {
  std::map<std::string, CompiledLine, std::less<>> out;
  for (const MetadataEntry& m : t.Rows<MetadataEntry>()) {
    std::string_view key = t.strings.Get(m.key_id);
    if (key.starts_with(kCompiledLineKey))
      out.emplace(std::string(key.substr(kCompiledLineKey.size())),
                  DecodeCompiledLine(t.strings.Get(m.value_id)));
  }
  return out;
}

}  // namespace tracesmith::model
