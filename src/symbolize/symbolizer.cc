#include "tracesmith/symbolize/symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <unordered_map>

#include "tracesmith/stacks/build_id.h"

namespace tracesmith::symbolize {
namespace {

std::string Demangle(const char* raw) {
  if (!raw) return "";
  // Versioned dynamic symbols read "name@@GLIBC_2.34": the version is noise here.
  std::string name(raw);
  if (size_t at = name.find('@'); at != std::string::npos && at > 0) name.resize(at);
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string s(out);
  std::free(out);
  return s;
}

// One ELF file opened through libdwfl at bias 0, so addresses are the
// file's own virtual addresses. Separate debug info is found the standard
// way (build-id under /usr/lib/debug, .gnu_debuglink).
class ElfModule {
 public:
  static StatusOr<std::unique_ptr<ElfModule>> Open(const std::string& path) {
    static char* debuginfo_path = nullptr;
    static const Dwfl_Callbacks kCallbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = &debuginfo_path,
    };
    std::unique_ptr<ElfModule> m(new ElfModule);
    m->dwfl_ = dwfl_begin(&kCallbacks);
    if (!m->dwfl_) return Internal(StrFormat("dwfl_begin: %s", dwfl_errmsg(-1)));
    dwfl_report_begin(m->dwfl_);
    m->mod_ = dwfl_report_elf(m->dwfl_, path.c_str(), path.c_str(), -1, 0, true);
    dwfl_report_end(m->dwfl_, nullptr, nullptr);
    if (!m->mod_) {
      return NotFound(StrFormat("%s: cannot open as ELF: %s", path.c_str(), dwfl_errmsg(-1)));
    }
    return m;
  }
  ~ElfModule() {
    if (dwfl_) dwfl_end(dwfl_);
  }

  SymbolInfo Lookup(uint64_t vaddr) {
    SymbolInfo info;
    GElf_Off offset = 0;
    GElf_Sym sym;
    const char* name = dwfl_module_addrinfo(mod_, vaddr, &offset, &sym, nullptr, nullptr, nullptr);
    if (name) info.function = Demangle(name);
    if (Dwfl_Line* line = dwfl_module_getsrc(mod_, vaddr)) {
      int lineno = 0;
      const char* src = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
      if (src && lineno > 0) {
        info.file = src;
        info.line = uint32_t(lineno);
      }
    }
    return info;
  }

 private:
  ElfModule() = default;
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* mod_ = nullptr;
};

// The file to read for a mapping: its recorded path, else a same-named file
// in a search directory, in both cases only with the recorded build-id.
std::string LocateModule(const std::string& path, const std::string& build_id,
                         const SymbolizeOptions& options, SymbolizeStats* stats) {
  std::vector<std::string> candidates = {path};
  std::string base = std::filesystem::path(path).filename().string();
  for (const std::string& dir : options.search_dirs)
    candidates.push_back((std::filesystem::path(dir) / base).string());
  bool mismatch = false;
  for (const std::string& c : candidates) {
    if (c.empty() || access(c.c_str(), R_OK) != 0) continue;
    if (build_id.empty() || stacks::ReadBuildIdFromFile(c) == build_id) return c;
    mismatch = true;
  }
  if (mismatch)
    ++stats->build_id_mismatch;
  else
    ++stats->modules_missing;
  return "";
}

}  // namespace

StatusOr<SymbolInfo> SymbolizeAddress(const std::string& elf_path, uint64_t vaddr) {
  ASSIGN_OR_RETURN(std::unique_ptr<ElfModule> m, ElfModule::Open(elf_path));
  return m->Lookup(vaddr);
}

StatusOr<SymbolizeStats> Symbolize(model::Trace* trace, const SymbolizeOptions& options) {
  SymbolizeStats stats;
  std::unordered_map<uint32_t, size_t> mapping_index;  // mapping_id -> row
  const auto& mappings = trace->Rows<model::Mapping>();
  for (size_t i = 0; i < mappings.size(); ++i) mapping_index[mappings[i].mapping_id] = i;
  // Opened lazily; nullptr when the module cannot be used.
  std::unordered_map<uint32_t, std::unique_ptr<ElfModule>> modules;

  // The clock is read before each module is opened (the costly step: libdw
  // reads its symbol table) and every 1024 frames.
  using Clock = std::chrono::steady_clock;
  const bool limited = options.time_limit_s > 0;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(limited ? options.time_limit_s : 0));
  uint64_t since_check = 0;
  auto& frames = trace->Rows<model::Frame>();
  for (size_t i = 0; i < frames.size(); ++i) {
    model::Frame& f = frames[i];
    if (f.kind != model::kFrameNative || f.mapping_id == 0) continue;
    if (f.function_id != 0 && !options.overwrite) continue;
    ++stats.native_frames;
    if (stats.timed_out) {
      ++stats.frames_left;
      continue;
    }
    auto mit = mapping_index.find(f.mapping_id);
    if (mit == mapping_index.end()) {
      return DataLoss(StrFormat("frame #%zu names mapping %u, which the trace does not have", i + 1,
                                f.mapping_id));
    }
    const bool opening = !modules.count(f.mapping_id);
    if (limited && (opening || ++since_check >= 1024)) {
      since_check = 0;
      if (Clock::now() >= deadline) {
        stats.timed_out = true;
        ++stats.frames_left;
        continue;
      }
    }
    auto [it, inserted] = modules.emplace(f.mapping_id, nullptr);
    if (inserted) {
      const model::Mapping& m = mappings[mit->second];
      std::string path =
          LocateModule(std::string(trace->strings.Get(m.path_id)),
                       std::string(trace->strings.Get(m.build_id_id)), options, &stats);
      if (!path.empty()) {
        auto opened = ElfModule::Open(path);
        if (opened.ok())
          it->second = std::move(opened).value();
        else
          ++stats.modules_missing;
      }
    }
    if (!it->second || f.rel_pc == 0) continue;
    SymbolInfo info = it->second->Lookup(f.rel_pc - 1);
    if (!info.function.empty()) {
      f.function_id = trace->strings.Intern(info.function);
      ++stats.with_function;
    }
    if (!info.file.empty()) {
      f.file_id = trace->strings.Intern(info.file);
      f.line = info.line;
      ++stats.with_line;
    }
  }
  return stats;
}

}  // namespace tracesmith::symbolize
