#include "tracesmith/timeline/call_site.h"

#include <algorithm>

#include "tracesmith/base/file_util.h"
#include "tracesmith/model/compiled_lines.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::analysis {
namespace {

// "torch::autograd::generated::MmBackward0::apply(...)" -> "MmBackward0".
std::string AutogradNode(std::string_view fn) {
  const size_t apply = fn.find("::apply(");
  if (fn.rfind("torch::autograd::", 0) != 0 || apply == std::string_view::npos) return "";
  std::string_view head = fn.substr(0, apply);
  const size_t colon = head.rfind("::");
  std::string_view node = colon == std::string_view::npos ? head : head.substr(colon + 2);
  if (node.empty() || node == "Node" || node == "Engine") return "";
  return std::string(node);
}

}  // namespace

// ".../lib/python3.12/site-packages/torch/nn/modules/linear.py" ->
// "torch/nn/modules/linear.py"; the standard library's from its directory.
std::string PackagePath(std::string_view path) {
  for (std::string_view dir : {"/site-packages/", "/dist-packages/"}) {
    const size_t at = path.rfind(dir);
    if (at != std::string_view::npos) return std::string(path.substr(at + dir.size()));
  }
  const size_t lib = path.rfind("/python3.");
  if (lib != std::string_view::npos) {
    const size_t slash = path.find('/', lib + 1);
    if (slash != std::string_view::npos) return std::string(path.substr(slash + 1));
  }
  return std::string(path);
}

static Pattern CompileOrNever(const std::string& pattern) {
  auto p = Pattern::Compile(pattern);
  return p.ok() ? std::move(*p) : Pattern();  // matches nothing (ValidateCallSiteRules reports it)
}

Status ValidateCallSiteRules(const CallSiteRules& rules) {
  for (const auto& [name, pattern] : {std::pair{"skip modules", &rules.skip_modules},
                                      std::pair{"skip functions", &rules.skip_functions},
                                      std::pair{"library files", &rules.library_files},
                                      std::pair{"generated files", &rules.generated_files}}) {
    if (auto p = Pattern::Compile(*pattern, /*optimize=*/false); !p.ok())
      return InvalidArgument(StrFormat("call-site %s regex '%s': %s", name, pattern->c_str(),
                                       p.status().message().c_str()));
  }
  return OkStatus();
}

CallSiteNamer::CallSiteNamer(const model::Trace& meta, const CallSiteRules& rules)
    : meta_(meta),
      skip_modules_(CompileOrNever(rules.skip_modules)),
      skip_functions_(CompileOrNever(rules.skip_functions)),
      library_files_(CompileOrNever(rules.library_files)),
      generated_files_(CompileOrNever(rules.generated_files)),
      skip_(meta.Rows<model::Frame>().size(), kUnknown),
      library_(meta.Rows<model::Frame>().size(), kUnknown),
      generated_(meta.Rows<model::Frame>().size(), kUnknown) {
  for (const model::Mapping& m : meta.Rows<model::Mapping>()) {
    if (m.mapping_id >= module_names_.size()) module_names_.resize(m.mapping_id + 1);
    if (!module_names_[m.mapping_id].empty()) continue;  // first process's path wins
    std::string path(meta.strings.Get(m.path_id));
    const size_t slash = path.rfind('/');
    module_names_[m.mapping_id] = slash == std::string::npos ? path : path.substr(slash + 1);
  }
  for (const auto& [where, c] : model::CompiledLines(meta)) {
    compiled_files_.insert(where.substr(0, where.rfind(':')));
    // The innermost frame of each stack trace, by file name: the first one's
    // line, then how many other lines the kernel was fused from; without
    // lines (torch.nn's own code), the graph's nodes Dynamo named.
    std::vector<std::string> lines;
    for (const model::ModelStack& st : c.stacks) {
      const model::ModelFrame& f = st.back();
      const size_t slash = f.file.rfind('/');
      std::string text =
          StrFormat("%s (%s:%u)", f.function.empty() ? "?" : f.function.c_str(),
                    f.file.substr(slash == std::string::npos ? 0 : slash + 1).c_str(), f.line);
      if (std::find(lines.begin(), lines.end(), text) == lines.end()) lines.push_back(text);
    }
    std::string named;
    if (!lines.empty()) {
      named = lines[0];
      if (lines.size() > 1) named += StrFormat(" (+%zu lines)", lines.size() - 1);
    } else if (!c.nodes.empty()) {
      named = "compiled ";
      for (size_t i = 0; i < c.nodes.size() && i < 3; ++i) named += (i ? ", " : "") + c.nodes[i];
      if (c.nodes.size() > 3) named += StrFormat(" (+%zu nodes)", c.nodes.size() - 3);
    } else {
      continue;
    }
    model_lines_.emplace(where, named);
  }
}

std::string CallSiteNamer::ModelLine(uint32_t id) {
  if (model_lines_.empty()) return "";
  const model::Frame& f = meta_.Rows<model::Frame>()[id - 1];
  auto it =
      model_lines_.find(std::string(meta_.strings.Get(f.file_id)) + ":" + std::to_string(f.line));
  return it == model_lines_.end() ? "" : it->second;
}

std::string CallSiteNamer::ModuleName(uint32_t mapping_id) const {
  return mapping_id < module_names_.size() ? module_names_[mapping_id] : std::string();
}

bool CallSiteNamer::Skipped(uint32_t id) {
  if (id > skip_.size()) skip_.resize(meta_.Rows<model::Frame>().size(), kUnknown);
  int8_t& s = skip_[id - 1];
  if (s == kUnknown) {
    const model::Frame& f = meta_.Rows<model::Frame>()[id - 1];
    const std::string module = ModuleName(f.mapping_id);
    const std::string fn(meta_.strings.Get(f.function_id));
    const bool skip = (!module.empty() && skip_modules_.Search(module)) ||
                      (!fn.empty() && skip_functions_.Search(fn));
    s = skip ? kSkip : kKeep;
  }
  return s == kSkip;
}

bool CallSiteNamer::FileMatches(std::vector<int8_t>& memo, const Pattern& rule, uint32_t id) {
  // Frames added to the trace after the namer was made (Name() takes every
  // frame the trace holds when it is called).
  if (id > memo.size()) memo.resize(meta_.Rows<model::Frame>().size(), kUnknown);
  int8_t& s = memo[id - 1];
  if (s == kUnknown) {
    const model::Frame& f = meta_.Rows<model::Frame>()[id - 1];
    s = f.file_id && rule.Search(meta_.strings.Get(f.file_id)) ? kSkip : kKeep;
  }
  return s == kSkip;
}

bool CallSiteNamer::LibraryFile(uint32_t id) { return FileMatches(library_, library_files_, id); }

bool CallSiteNamer::GeneratedFile(uint32_t id) {
  if (FileMatches(generated_, generated_files_, id)) return true;
  // A file torch's log names as compiled output, wherever Inductor's cache is
  // (TORCHINDUCTOR_CACHE_DIR): checked once per frame.
  int8_t& s = generated_[id - 1];
  if (s != kKeep) return false;
  s = kKeptTwice;
  const model::Frame& f = meta_.Rows<model::Frame>()[id - 1];
  if (f.kind != model::kFramePython || compiled_files_.empty() ||
      !compiled_files_.contains(meta_.strings.Get(f.file_id)))
    return false;
  s = kSkip;
  return true;
}

// Library code that generated code calls for work of its own, not to launch
// a compiled kernel: CUDA graph trees copying a graph's inputs into its
// static buffers before a replay (torch.compile's mode="reduce-overhead").
static bool OwnWorkOfGeneratedCode(std::string_view package_path) {
  return package_path == "torch/_inductor/cudagraph_trees.py";
}

// A launch through compiler-generated code (torch.compile): the program's
// innermost line outside libraries and generated code, then the generated
// line that launched the kernel (the innermost generated frame in a file, not
// a launcher built from a string).
std::string CallSiteNamer::ThroughGeneratedCode(const std::vector<uint32_t>& frames) {
  const auto& table = meta_.Rows<model::Frame>();
  uint32_t in_file = 0, any = 0, user = 0;  // generated frames: in a file, any; the program's
  uint32_t machinery = 0;  // a library line doing work of its own for the generated code
  for (uint32_t id : frames) {
    const model::Frame& f = table[id - 1];
    if (f.kind != model::kFramePython) continue;
    if (GeneratedFile(id)) {
      if (!any) any = id;
      if (!in_file && !meta_.strings.Get(f.file_id).starts_with("<")) in_file = id;
      continue;
    }
    if (LibraryFile(id)) {
      if (!any && !machinery && OwnWorkOfGeneratedCode(PackagePath(meta_.strings.Get(f.file_id))))
        machinery = id;
      continue;
    }
    if (!any) return "";  // the program's own line comes first
    user = id;
    break;
  }
  // Code built from strings alone (a dataclass's __init__, exec) is not a
  // compiler's output: compiled code has its generated file on the stack.
  if (!in_file) return "";
  // The model's line the kernel came from, where the trace has it (the
  // generated line stays in the stack: flame graph, view).
  // Without one, work of its own the generated line asked a library for (CUDA
  // graph trees copying inputs into a graph's buffers) is named by the library's line.
  std::string launched = ModelLine(in_file);
  if (launched.empty()) launched = FrameText(machinery ? machinery : in_file);
  return user ? FrameText(user, true) + " > " + launched : launched;
}

std::string CallSiteNamer::FrameText(uint32_t id, bool file_name_only) {
  const model::Frame& f = meta_.Rows<model::Frame>()[id - 1];
  std::string text(meta_.strings.Get(f.function_id));
  if (text.empty()) {
    const std::string module = ModuleName(f.mapping_id);
    text = StrFormat("%s+0x%llx", module.empty() ? "?" : module.c_str(),
                     static_cast<unsigned long long>(f.rel_pc));
  }
  if (f.file_id) {
    std::string_view file = meta_.strings.Get(f.file_id);
    const size_t slash = file.rfind('/');
    const size_t cache = f.kind == model::kFramePython && GeneratedFile(id)
                             ? file.find("/torchinductor_")
                             : std::string_view::npos;
    const std::string shown =
        f.kind == model::kFramePython && LibraryFile(id) ? PackagePath(file)
        : cache != std::string_view::npos ? std::string(file.substr(cache + 1))  // Inductor's cache
        : file_name_only && slash != std::string_view::npos ? std::string(file.substr(slash + 1))
                                                            : std::string(file);
    text += StrFormat(" (%s:%u)", shown.c_str(), f.line);
  }
  return text;
}

std::string CallSiteNamer::Name(uint32_t stack_id, bool* unnamed) {
  if (unnamed) *unnamed = false;
  if (!stack_id) return "(no stack)";
  const size_t n_frames = meta_.Rows<model::Frame>().size();
  std::vector<uint32_t> frames;
  for (uint32_t id : model::StackFrames(meta_, stack_id))
    if (id && id <= n_frames) frames.push_back(id);
  if (frames.empty()) return "(unknown frame)";
  const auto& table = meta_.Rows<model::Frame>();
  if (std::string named = ThroughGeneratedCode(frames); !named.empty()) return named;
  for (size_t i = 0; i < frames.size(); ++i) {
    const uint32_t id = frames[i];
    if (table[id - 1].kind != model::kFramePython) continue;
    if (!LibraryFile(id)) return FrameText(id);
    // In a package: the program's innermost line that led there, first.
    for (size_t j = i + 1; j < frames.size(); ++j) {
      const uint32_t user = frames[j];
      if (table[user - 1].kind == model::kFramePython && !LibraryFile(user))
        return FrameText(user, true) + " > " + FrameText(id);
    }
    return FrameText(id);
  }
  // The autograd engine's thread: name the node it was running.
  bool autograd = false;
  for (uint32_t id : frames)
    autograd |= meta_.strings.Get(table[id - 1].function_id).find(kAutogradThread) !=
                std::string_view::npos;
  if (autograd) {
    for (uint32_t id : frames) {
      std::string node = AutogradNode(meta_.strings.Get(table[id - 1].function_id));
      if (!node.empty()) return "autograd backward: " + node;
    }
    // Outside a node's apply: the engine's own step (e.g. reducing a
    // gradient to its input's shape), named without its argument list.
    for (uint32_t id : frames) {
      std::string_view fn = meta_.strings.Get(table[id - 1].function_id);
      if (fn.rfind("torch::autograd::", 0) != 0 ||
          fn.rfind("torch::autograd::VariableType::", 0) == 0)
        continue;
      return "autograd backward: " + std::string(fn.substr(0, fn.find('(')));
    }
  }
  const std::string prefix = autograd ? "autograd backward: " : "";
  for (uint32_t id : frames)  // named code of the program or framework
    if (!Skipped(id) && table[id - 1].function_id) return prefix + FrameText(id);
  // No named frame to attribute to: the first one kept, which when native
  // has no name either.
  uint32_t shown = frames.front();
  for (uint32_t id : frames)
    if (!Skipped(id)) {
      shown = id;
      break;
    }
  if (unnamed)
    *unnamed = table[shown - 1].kind != model::kFramePython && !table[shown - 1].function_id;
  return prefix + FrameText(shown);
}

}  // namespace tracesmith::analysis
