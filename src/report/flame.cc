#include "tracesmith/report/flame.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "tracesmith/analysis/pc_profile.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/path.h"
#include "tracesmith/model/compiled_lines.h"
#include "tracesmith/model/process_rank.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::report {
namespace {

// ';' separates frames and a newline ends a line in the folded format: a
// name holding either would be read as two frames or two lines.
std::string Sanitized(std::string s) {
  for (char& c : s)
    if (c == ';' || c == '\n' || c == '\r') c = '_';
  return s;
}

std::string ModuleFileName(const model::Trace& meta, uint32_t mapping_id) {
  for (const model::Mapping& m : meta.Rows<model::Mapping>())
    if (m.mapping_id == mapping_id) return std::string(FileNameOf(meta.strings.Get(m.path_id)));
  return "?";
}

// The C and C++ runtime's shared objects, by file name ("libc.so.6",
// "libstdc++.so.6", "ld-linux-x86-64.so.2"): the thread start-up code.
bool RuntimeModule(std::string_view file) {
  const size_t so = file.find(".so");
  if (so == std::string_view::npos) return false;
  const std::string_view stem = file.substr(0, so);
  for (std::string_view name : {"libc", "libpthread", "libstdc++", "libc++", "libc++abi",
                                "libgcc_s", "libc.musl-x86_64", "libc.musl-aarch64"})
    if (stem == name) return true;
  return stem.starts_with("ld-linux") || stem.starts_with("ld-musl");
}

// The process's start (main thread): crt1's `_start`, glibc's
// __libc_start_main / __libc_start_call_main (and their versioned aliases).
bool ProcessStartFunction(std::string_view fn) {
  return fn == "_start" || fn.starts_with("__libc_start");
}

// Another thread's start: glibc's clone/clone3 and start_thread, libstdc++'s
// std::thread trampoline (named in a static runtime, or with symbols).
bool ThreadStartFunction(std::string_view fn) {
  for (std::string_view name : {"clone", "clone3", "__clone", "__clone3", "__clone_internal",
                                "start_thread", "execute_native_thread_routine"})
    if (fn == name) return true;
  return false;
}

// "ns::f(int, char const*) const [clone .isra.0]" -> "ns::f": the argument
// list (the last balanced parentheses), cv/ref qualifiers and clone suffixes
// dropped; a name without an argument list as it is.
std::string FunctionWithoutArguments(std::string_view fn) {
  for (;;) {  // " [clone .isra.0]", " const", " &", ...
    const size_t bracket = fn.rfind(" [");
    if (bracket != std::string_view::npos && fn.ends_with("]")) {
      fn = fn.substr(0, bracket);
      continue;
    }
    bool trimmed = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"})
      if (fn.ends_with(q)) {
        fn.remove_suffix(q.size());
        trimmed = true;
      }
    if (!trimmed) break;
  }
  if (!fn.ends_with(")")) return std::string(fn);
  int depth = 0;
  for (size_t i = fn.size(); i-- > 0;) {
    if (fn[i] == ')') depth++;
    if (fn[i] == '(' && --depth == 0) return i ? std::string(fn.substr(0, i)) : std::string(fn);
  }
  return std::string(fn);
}

// FindThreadRoot over the stacks of one trace: the module file names are
// read once (mapping id -> file name), not per frame.
class StartFrames {
 public:
  explicit StartFrames(const model::Trace& meta) : meta_(meta) {
    for (const model::Mapping& m : meta.Rows<model::Mapping>())
      modules_.try_emplace(m.mapping_id, FileNameOf(meta.strings.Get(m.path_id)));
  }

  ThreadRoot Find(const std::vector<uint32_t>& leaf_first) const {
    const auto& table = meta_.Rows<model::Frame>();
    const size_t n = leaf_first.size();
    auto frame = [&](size_t from_root) -> const model::Frame* {
      const uint32_t id = leaf_first[n - 1 - from_root];
      return id && id <= table.size() ? &table[id - 1] : nullptr;
    };
    auto native = [&](const model::Frame* f) { return f && f->kind == model::kFrameNative; };
    auto function = [&](const model::Frame* f) { return meta_.strings.Get(f->function_id); };
    auto runtime = [&](const model::Frame* f) { return RuntimeModule(Module(f->mapping_id)); };

    size_t k = 0;
    bool main_thread = false;
    for (; k < n; ++k) {
      const model::Frame* f = frame(k);
      if (!native(f)) break;
      const std::string_view fn = function(f);
      if (runtime(f) || ProcessStartFunction(fn) || ThreadStartFunction(fn)) {
        main_thread |= ProcessStartFunction(fn);
        continue;
      }
      // The program's own `_start` without a symbol: a frame of the
      // executable at the root, right above the C runtime.
      const std::string_view module = Module(f->mapping_id);
      if (k == 0 && fn.empty() && !module.empty() && module != "?" &&
          module.find(".so") == std::string_view::npos && n > 1 && native(frame(1)) &&
          runtime(frame(1))) {
        main_thread = true;
        continue;
      }
      break;
    }
    if (k == 0 || k == n) return {};
    ThreadRoot root{k, "thread: main"};
    if (main_thread) return root;
    for (size_t i = k; i < n; ++i) {
      const model::Frame* f = frame(i);
      if (!native(f)) break;
      const std::string_view fn = function(f);
      if (fn.starts_with("torch::autograd::") && fn.find("Engine::thread_") != fn.npos) {
        root.label = "thread: autograd";
        return root;
      }
    }
    // The entry, past libstdc++'s std::thread state and invoke wrappers.
    size_t entry = k;
    while (entry + 1 < n && native(frame(entry))) {
      const std::string_view fn = function(frame(entry));
      if (!fn.starts_with("std::thread::_State_impl<") &&
          !fn.starts_with("std::thread::_Invoker<") && !fn.starts_with("std::__invoke") &&
          !fn.starts_with("void std::__invoke"))
        break;
      entry++;
    }
    const model::Frame* f = frame(entry);
    std::string name;
    if (f && f->function_id)
      name = FunctionWithoutArguments(function(f));
    else if (f)
      name = StrFormat("%s+0x%llx", std::string(Module(f->mapping_id)).c_str(),
                       static_cast<unsigned long long>(f->rel_pc));
    root.label = "thread: " + (name.empty() ? std::string("?") : name);
    return root;
  }

 private:
  std::string_view Module(uint32_t mapping_id) const {
    auto it = modules_.find(mapping_id);
    return it == modules_.end() ? std::string_view("?") : std::string_view(it->second);
  }

  const model::Trace& meta_;
  std::unordered_map<uint32_t, std::string> modules_;  // first row of each mapping id
};

// The leaf of an op: its kernel name, or the copy's kind.
std::string OpLabel(const analysis::CompactTrace& t, const analysis::GpuOp& op) {
  switch (op.kind()) {
    case analysis::OpKind::kKernel: {
      std::string name(t.String(op.name_id));
      return name.empty() ? "(unnamed kernel)" : name;
    }
    case analysis::OpKind::kMemcpy:
      return op.extra < t.copies().size()
                 ? StrFormat("[memcpy %s]", model::CopyKindName(t.copies()[op.extra].copy_kind))
                 : "[memcpy]";
    case analysis::OpKind::kMemset:
      return "[memset]";
  }
  return "?";
}

std::string ProcessLabel(const model::Trace& meta, uint32_t pid) {
  for (const model::Process& p : meta.Rows<model::Process>()) {
    if (p.pid != pid) continue;
    if (auto rank = model::KnownRank(p)) return StrFormat("rank %d (pid %u)", *rank, pid);
    std::string name(meta.strings.Get(p.name_id));
    if (!name.empty()) return StrFormat("pid %u (%s)", pid, name.c_str());
  }
  return StrFormat("pid %u", pid);
}

}  // namespace

StatusOr<FlameWeight> ParseFlameWeight(std::string_view text) {
  if (text == "gpu-time") return FlameWeight::kGpuTime;
  if (text == "launches") return FlameWeight::kLaunches;
  return InvalidArgument("flame-graph weight '" + std::string(text) +
                         "': expected gpu-time (GPU ns of the ops launched) or launches");
}

const char* FlameWeightName(FlameWeight weight) {
  return weight == FlameWeight::kGpuTime ? "gpu-time" : "launches";
}

ThreadRoot FindThreadRoot(const model::Trace& meta, const std::vector<uint32_t>& leaf_first) {
  ThreadRoot root = StartFrames(meta).Find(leaf_first);
  root.label = Sanitized(std::move(root.label));
  return root;
}

std::string FlameFrameLabel(const model::Trace& meta, uint32_t frame_id) {
  const auto& frames = meta.Rows<model::Frame>();
  if (frame_id == 0 || frame_id > frames.size()) return "?";
  const model::Frame& f = frames[frame_id - 1];
  std::string text(meta.strings.Get(f.function_id));
  if (text.empty())
    text = StrFormat("%s+0x%llx", ModuleFileName(meta, f.mapping_id).c_str(),
                     static_cast<unsigned long long>(f.rel_pc));
  if (f.file_id)
    text += StrFormat(" (%s:%u)", std::string(meta.strings.Get(f.file_id)).c_str(), f.line);
  return Sanitized(std::move(text));
}

FoldedStacks FoldStacks(const analysis::CompactTrace& t, FlameWeight weight) {
  FoldedStacks out;
  out.weight = weight;
  // First by (pid, stack id, leaf): 10 M ops reduce to a few thousand keys
  // before any text is built. The leaf is the kernel's name id, or a copy
  // kind / memset tagged in the top bits (name ids stay far below 2^30).
  struct Key {
    uint32_t pid, stack, leaf;
    bool operator<(const Key& o) const {
      return std::tie(pid, stack, leaf) < std::tie(o.pid, o.stack, o.leaf);
    }
  };
  std::map<Key, std::pair<uint64_t, uint32_t>> by_key;  // weight, an op with that key
  std::set<uint32_t> pids;
  const auto ops = t.ops();
  for (uint32_t oi = 0; oi < ops.size(); ++oi) {
    const analysis::GpuOp& op = ops[oi];
    const uint32_t stack = t.StackOfOp(oi);
    uint32_t leaf = op.name_id;
    if (op.kind() == analysis::OpKind::kMemcpy)
      leaf = 0x80000000u | (op.extra < t.copies().size() ? t.copies()[op.extra].copy_kind : 0);
    if (op.kind() == analysis::OpKind::kMemset) leaf = 0xC0000000u;
    const uint32_t pid = t.PidOfLane(op.lane());
    pids.insert(pid);
    auto [it, added] = by_key.try_emplace(Key{pid, stack, leaf}, 0, oi);
    it->second.first += weight == FlameWeight::kGpuTime ? op.duration() : 1;
    out.ops++;
    if (!stack) out.ops_without_stack++;
  }
  const model::Trace& meta = t.meta();
  const bool per_process = pids.size() > 1;
  std::unordered_map<uint32_t, std::string> labels;  // frame id -> label
  std::map<std::string, uint64_t> merged;
  const StartFrames start_frames(meta);
  const auto profiles = analysis::InstructionProfiles(t);
  // torch.compile: the model's frames (or the graph's nodes) above each
  // generated line that has them (model/compiled_lines.h).
  const auto compiled = model::CompiledLines(meta);
  auto model_frames = [&](uint32_t frame_id) {
    std::string out;
    const model::Frame& f = meta.Rows<model::Frame>()[frame_id - 1];
    if (compiled.empty() || f.kind != model::kFramePython || !f.file_id) return out;
    auto c = compiled.find(std::string(meta.strings.Get(f.file_id)) + ":" + std::to_string(f.line));
    if (c == compiled.end()) return out;
    if (!c->second.stacks.empty()) {
      for (const model::ModelFrame& m : c->second.stacks.front())
        out += Sanitized(StrFormat("%s (%s:%u)", m.function.c_str(), m.file.c_str(), m.line)) + ";";
    } else if (!c->second.nodes.empty()) {
      std::string nodes = "compiled";
      for (size_t i = 0; i < c->second.nodes.size(); ++i)
        nodes += (i ? ", " : " ") + c->second.nodes[i];
      out += Sanitized(nodes) + ";";
    }
    return out;
  };
  for (const auto& [key, value] : by_key) {
    std::string text = per_process ? Sanitized(ProcessLabel(meta, key.pid)) + ";" : "";
    std::vector<uint32_t> frames =
        key.stack ? model::StackFrames(meta, key.stack) : std::vector<uint32_t>{};
    if (frames.empty()) text += std::string(kNoStack) + ";";
    // The thread's start-up: one box naming the thread instead.
    const ThreadRoot root = start_frames.Find(frames);
    if (root.start_frames) {
      text += Sanitized(root.label);
      text += ';';
    }
    for (auto f = frames.rbegin() + ptrdiff_t(root.start_frames); f != frames.rend();
         ++f) {  // root first
      auto [l, added] = labels.try_emplace(*f);
      if (added) l->second = model_frames(*f) + FlameFrameLabel(meta, *f);
      text += l->second;
      text += ';';
    }
    text += Sanitized(OpLabel(t, ops[value.second]));
    out.total += value.first;
    // GPU frames under a sampled kernel: its time split by where its samples
    // landed (source line, then instruction).
    auto profile = key.leaf < 0x80000000u && weight == FlameWeight::kGpuTime
                       ? profiles.find(uint64_t(key.pid) << 32 | key.leaf)
                       : profiles.end();
    if (profile == profiles.end() || profile->second.samples == 0) {
      merged[text] += value.first;
      continue;
    }
    const analysis::FunctionProfile& p = profile->second;
    uint64_t given = 0;
    for (const analysis::ProfiledInstruction& i : p.instructions) {
      const uint64_t part =
          static_cast<uint64_t>(static_cast<long double>(value.first) * i.samples / p.samples);
      if (part == 0) continue;
      merged[text + ";" + Sanitized(i.line) + ";" + Sanitized(i.instruction)] += part;
      given += part;
    }
    if (value.first > given) {  // rounding: to the hottest instruction
      const analysis::ProfiledInstruction& i = p.instructions.front();
      merged[text + ";" + Sanitized(i.line) + ";" + Sanitized(i.instruction)] +=
          value.first - given;
    }
  }
  out.lines.reserve(merged.size());
  for (auto& [text, w] : merged) out.lines.push_back({text, w});
  return out;
}

StatusOr<FoldedStacks> FoldStacksOfFile(const std::string& path, FlameWeight weight,
                                        format::ReadReport* damage) {
  analysis::CompactTrace trace;
  RETURN_IF_ERROR(analysis::LoadCompactTrace(path, analysis::LoadOptions{}, &trace, damage));
  return FoldStacks(trace, weight);
}

StatusOr<FoldedStacks> FoldStacksOfFile(format::TraceSource& source, FlameWeight weight,
                                        format::ReadReport* damage) {
  analysis::CompactTrace trace;
  RETURN_IF_ERROR(analysis::LoadCompactTrace(source, analysis::LoadOptions{}, &trace, damage));
  return FoldStacks(trace, weight);
}

void WriteFolded(const FoldedStacks& stacks, std::ostream& out) {
  for (const FoldedStack& s : stacks.lines) out << s.frames << ' ' << s.weight << '\n';
}

StatusOr<FoldedFileStats> WriteFoldedFile(const std::string& sbt_path, const std::string& out_path,
                                          FlameWeight weight, bool refuse_damaged_input,
                                          format::ReadReport* damage) {
  const std::string inputs[] = {sbt_path};
  RETURN_IF_ERROR(CheckOutputPath(out_path, inputs));
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> source, format::OpenFileSource(sbt_path));
  return WriteFoldedFile(*source, out_path, weight, refuse_damaged_input, damage);
}

StatusOr<FoldedFileStats> WriteFoldedFile(format::TraceSource& source, const std::string& out_path,
                                          FlameWeight weight, bool refuse_damaged_input,
                                          format::ReadReport* damage) {
  const std::vector<std::string> inputs = source.files();
  RETURN_IF_ERROR(CheckOutputPath(out_path, inputs));
  format::ReadReport read;
  ASSIGN_OR_RETURN(FoldedStacks folded, FoldStacksOfFile(source, weight, &read));
  if (refuse_damaged_input) RETURN_IF_ERROR(read.DamageStatus(source.name()));
  if (damage) *damage = read;
  FoldedFileStats stats;
  ASSIGN_OR_RETURN(stats.bytes, WriteFileAtomically(out_path, inputs, [&](std::ostream& file) {
                     WriteFolded(folded, file);
                     return OkStatus();
                   }));
  stats.lines = folded.lines.size();
  stats.total = folded.total;
  stats.ops = folded.ops;
  return stats;
}

}  // namespace tracesmith::report

namespace tracesmith::report {

FlameTree BuildFlameTree(const FoldedStacks& stacks, uint64_t min_value, size_t max_nodes) {
  FlameTree tree;
  tree.names.push_back("all");
  std::unordered_map<std::string_view, uint32_t> name_index;
  auto intern = [&](std::string_view s) {
    auto it = name_index.find(s);
    if (it != name_index.end()) return it->second;
    tree.names.emplace_back(s);
    const uint32_t id = uint32_t(tree.names.size() - 1);
    name_index.emplace(s, id);  // views into `stacks`, which outlives the map
    return id;
  };
  // Children are found by name through a per-node map while building.
  struct Building {
    uint32_t name;
    uint64_t value = 0;
    std::map<uint32_t, size_t> child;  // name -> index in nodes
  };
  std::vector<Building> nodes{{0}};
  std::vector<std::vector<size_t>> kids(1);
  for (const FoldedStack& line : stacks.lines) {
    size_t at = 0;
    nodes[0].value += line.weight;
    std::string_view rest = line.frames;
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      const uint32_t name = intern(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      auto [it, added] = nodes[at].child.try_emplace(name, nodes.size());
      if (added) {
        nodes.push_back({name});
        kids.emplace_back();
        kids[at].push_back(it->second);
      }
      at = it->second;
      nodes[at].value += line.weight;
    }
  }
  // The cap: the max_nodes first nodes by (value, descending; index). A node
  // is created before its children and is never smaller than one, so it
  // comes before them in that order and what is kept stays one tree, ties
  // included (a value threshold would keep every node tied at it).
  std::vector<bool> keep(nodes.size(), true);
  if (max_nodes && nodes.size() > max_nodes) {
    std::vector<size_t> order(nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::nth_element(
        order.begin(), order.begin() + (max_nodes - 1), order.end(), [&](size_t a, size_t b) {
          return nodes[a].value != nodes[b].value ? nodes[a].value > nodes[b].value : a < b;
        });
    keep.assign(nodes.size(), false);
    for (size_t k = 0; k < max_nodes; ++k) keep[order[k]] = true;
  }
  // Copies the kept nodes into the tree, largest child first.
  auto copy = [&](auto&& self, size_t i, FlameNode* out) -> void {
    out->name = nodes[i].name;
    out->value = nodes[i].value;
    tree.nodes++;
    std::vector<size_t> order = kids[i];
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return nodes[a].value != nodes[b].value
                 ? nodes[a].value > nodes[b].value
                 : tree.names[nodes[a].name] < tree.names[nodes[b].name];
    });
    for (size_t k : order) {
      if (nodes[k].value < min_value || !keep[k]) {
        tree.pruned_nodes++;
        continue;
      }
      out->children.emplace_back();
      self(self, k, &out->children.back());
    }
  };
  copy(copy, 0, &tree.root);
  return tree;
}

}  // namespace tracesmith::report
