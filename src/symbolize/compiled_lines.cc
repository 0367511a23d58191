#include "tracesmith/symbolize/compiled_lines.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "tracesmith/base/file_util.h"
#include "tracesmith/base/text.h"

namespace tracesmith::symbolize {
namespace {

using json = nlohmann::json;

constexpr std::string_view kHandleComment = "# [Provenance debug handles] ";
constexpr std::string_view kStackArtifact = "inductor_provenance_tracking_kernel_stack_traces";
constexpr std::string_view kNodeArtifact = "inductor_provenance_tracking_node_mappings";

using Table = std::map<std::string, std::vector<std::string>>;

// {key: [string, ...]} of a JSON object (other values skipped).
Table StringLists(const json& j) {
  Table out;
  if (!j.is_object()) return out;
  for (auto& [k, v] : j.items()) {
    if (!v.is_array()) continue;
    std::vector<std::string>& l = out[k];
    for (const json& s : v)
      if (s.is_string()) l.push_back(s.get<std::string>());
  }
  return out;
}

// kernel:handle -> pre-grad nodes (cppCodeToPost, then postToPre; in order, once each).
Table KernelNodes(const json& mappings) {
  Table out;
  if (!mappings.is_object()) return out;
  const Table to_post = StringLists(mappings.value("cppCodeToPost", json::object()));
  const Table to_pre = StringLists(mappings.value("postToPre", json::object()));
  for (const auto& [kernel, posts] : to_post) {
    std::vector<std::string>& names = out[kernel];
    for (const std::string& post : posts) {
      auto pre = to_pre.find(post);
      if (pre == to_pre.end()) continue;
      for (const std::string& n : pre->second)
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  }
  return out;
}

// The index of the table sharing most keys with `handles` (tables.size()
// when none shares one).
size_t BestTable(const std::set<std::string>& handles, const std::vector<Table>& tables) {
  size_t best = tables.size(), best_n = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    size_t n = 0;
    for (const auto& [k, v] : tables[i]) n += handles.count(k);
    if (n > best_n) best = i, best_n = n;
  }
  return best;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    out.push_back(text.substr(0, eol));
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  return out;
}

// A kernel call of the generated code: a Triton kernel's run, an extern
// kernel (cuBLAS, cuDNN) or an aten op.
bool IsKernelCall(std::string_view s) {
  for (std::string_view call : {".run(", "extern_kernels.", "torch.ops."})
    if (s.find(call) != std::string_view::npos) return true;
  return false;
}

// Open parentheses left after `s` (strings are not looked into: generated
// calls have none that hold parentheses).
int ParenDepth(std::string_view s) {
  int d = 0;
  for (char c : s) d += c == '(' ? 1 : c == ')' ? -1 : 0;
  return d;
}

struct LogEntry {
  json meta;
  std::string payload;
};

// The entries of one structured log: a glog-prefixed line ending in a JSON
// object, then its payload lines, each starting with a tab.
std::vector<LogEntry> LogEntries(std::string_view text) {
  std::vector<LogEntry> out;
  for (std::string_view line : Lines(text)) {
    if (line.starts_with("\t")) {
      if (!out.empty()) {
        out.back().payload.append(line.substr(1));
        out.back().payload.push_back('\n');
      }
      continue;
    }
    const size_t brace = line.find("] {");
    if (brace == std::string_view::npos) continue;
    json meta = json::parse(line.substr(brace + 2), nullptr, /*allow_exceptions=*/false);
    if (meta.is_object()) out.push_back(LogEntry{std::move(meta), {}});
  }
  return out;
}

std::string StringAt(const json& j, const char* a, const char* b) {
  auto i = j.find(a);
  if (i == j.end() || !i->is_object()) return "";
  auto k = i->find(b);
  return k != i->end() && k->is_string() ? k->get<std::string>() : "";
}

}  // namespace

model::ModelStack ParseStackTrace(std::string_view text) {
  model::ModelStack out;
  for (std::string_view line : Lines(text)) {
    line = Trim(line);
    if (!line.starts_with("File \"")) continue;
    const size_t end = line.find("\", line ", 6);
    if (end == std::string_view::npos) continue;
    model::ModelFrame f;
    f.file = std::string(line.substr(6, end - 6));
    if (f.file.empty()) continue;  // a frame of no file names nothing
    std::string_view rest = line.substr(end + 8);
    uint32_t n = 0;
    size_t i = 0;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9')
      n = n * 10 + uint32_t(rest[i++] - '0');
    if (i == 0) continue;
    f.line = n;
    rest.remove_prefix(i);
    if (rest.starts_with(", in ")) f.function = std::string(Trim(rest.substr(5)));
    out.push_back(std::move(f));
  }
  return out;
}

std::map<uint32_t, std::string> HandleLines(std::string_view code) {
  std::map<uint32_t, std::string> out;
  const std::vector<std::string_view> lines = Lines(code);
  std::string handle;            // of the comment above, while its call is to come
  std::vector<uint32_t> before;  // lines since the comment (get_raw_stream, ...)
  int depth = 0;                 // open parentheses of the call, inside it
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view s = Trim(lines[i]);
    const uint32_t n = uint32_t(i + 1);
    if (depth > 0) {  // a continuation line of the call
      out[n] = handle;
      depth += ParenDepth(s);
      if (depth <= 0) handle.clear();
      continue;
    }
    if (s.starts_with(kHandleComment)) {
      handle = std::string(Trim(s.substr(kHandleComment.size())));
      before.clear();
    } else if (handle.empty()) {
      // no comment above: a line no kernel is launched from
    } else if (s.empty() || s.starts_with("def ") || s.starts_with("return")) {
      handle.clear();  // the comment's call never came: its lines stay unmapped
    } else if (IsKernelCall(s)) {
      for (uint32_t b : before) out[b] = handle;
      out[n] = handle;
      depth = ParenDepth(s);
      if (depth <= 0) handle.clear();
    } else {
      before.push_back(n);
    }
  }
  return out;
}

std::vector<CompiledGraph> ParseTorchTraceLog(std::string_view text) {
  std::vector<CompiledGraph> out, codes;
  std::vector<Table> stacks, nodes;
  for (LogEntry& e : LogEntries(text)) {
    if (std::string file = StringAt(e.meta, "inductor_output_code", "filename"); !file.empty()) {
      codes.push_back(CompiledGraph{std::move(file), std::move(e.payload), {}, {}});
    } else if (const std::string name = StringAt(e.meta, "artifact", "name");
               name == kStackArtifact) {
      stacks.push_back(StringLists(json::parse(e.payload, nullptr, false)));
    } else if (name == kNodeArtifact) {
      nodes.push_back(KernelNodes(json::parse(e.payload, nullptr, false)));
    }
  }
  // Each code with the tables sharing most of its handles (handles start
  // again at 1 in every graph: another graph's tables share few).
  for (CompiledGraph& g : codes) {
    std::set<std::string> mine;
    for (const auto& [line, h] : HandleLines(g.code)) mine.insert(h);
    if (size_t i = BestTable(mine, stacks); i < stacks.size()) g.stacks = stacks[i];
    if (size_t i = BestTable(mine, nodes); i < nodes.size()) g.nodes = nodes[i];
    out.push_back(std::move(g));
  }
  return out;
}

StatusOr<std::vector<CompiledGraph>> ReadTorchTrace(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return NotFound("torch structured log " + dir + ": " + ec.message());
  std::vector<std::string> files;
  for (const auto& e : it)
    if (e.is_regular_file(ec)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<CompiledGraph> out;
  for (const std::string& f : files) {
    auto text = ReadFileToString(f);
    if (!text.ok()) continue;
    for (CompiledGraph& g : ParseTorchTraceLog(*text)) out.push_back(std::move(g));
  }
  return out;
}

CompiledLinesStats AddCompiledLines(model::Trace* trace, const std::vector<CompiledGraph>& graphs) {
  CompiledLinesStats stats;
  std::map<std::string, const CompiledGraph*> by_file;
  for (const CompiledGraph& g : graphs)
    if (!g.stacks.empty() || !g.nodes.empty()) by_file[g.file] = &g;
  if (by_file.empty()) return stats;
  std::set<std::string> have;
  for (const model::MetadataEntry& m : trace->Rows<model::MetadataEntry>())
    if (std::string_view k = trace->strings.Get(m.key_id); k.starts_with(model::kCompiledLineKey))
      have.insert(std::string(k));
  std::map<std::string, std::map<uint32_t, std::string>> handles;  // per generated file
  std::set<std::pair<std::string, uint32_t>> seen;
  std::vector<model::MetadataEntry> added;
  for (const model::Frame& f : trace->Rows<model::Frame>()) {
    if (f.kind != model::kFramePython || !f.file_id) continue;
    const std::string file(trace->strings.Get(f.file_id));
    auto g = by_file.find(file);
    if (g == by_file.end() || !seen.emplace(file, f.line).second) continue;
    ++stats.generated_lines;
    auto h = handles.find(file);
    if (h == handles.end()) {
      auto on_disk = ReadFileToString(file);  // the frames' line numbers are the file's
      h = handles.emplace(file, HandleLines(on_disk.ok() ? *on_disk : g->second->code)).first;
    }
    auto line = h->second.find(f.line);
    if (line == h->second.end()) continue;
    model::CompiledLine c;
    if (auto st = g->second->stacks.find(line->second); st != g->second->stacks.end())
      for (const std::string& text : st->second)
        if (model::ModelStack s = ParseStackTrace(text);
            !s.empty() && std::find(c.stacks.begin(), c.stacks.end(), s) == c.stacks.end())
          c.stacks.push_back(std::move(s));
    if (auto n = g->second->nodes.find(line->second); n != g->second->nodes.end())
      c.nodes = n->second;
    if (c.stacks.empty() && c.nodes.empty()) continue;
    std::string key = model::CompiledLineKey(file, f.line);
    ++(c.stacks.empty() ? stats.with_nodes : stats.with_model);
    if (have.count(key)) continue;
    added.push_back(
        model::MetadataEntry{.key_id = trace->strings.Intern(key),
                             .value_id = trace->strings.Intern(model::EncodeCompiledLine(c))});
  }
  for (model::MetadataEntry& m : added) trace->Rows<model::MetadataEntry>().push_back(m);
  return stats;
}

}  // namespace tracesmith::symbolize
