#include "module_registry.h"

#include "tracesmith/stacks/build_id.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace tracesmith::stacks {
namespace {

// Build-id of a loaded object whose ELF header starts its first mapping
// (true for objects linked normally); "" otherwise. Segments are found at
// bias + p_vaddr and must lie inside [start, end).
std::string BuildIdInMemory(uint64_t start, uint64_t end, uint64_t bias) {
  if (end - start < sizeof(ElfW(Ehdr))) return "";
  ElfW(Ehdr) eh;
  std::memcpy(&eh, reinterpret_cast<const void*>(start), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_phentsize != sizeof(ElfW(Phdr)) ||
      eh.e_phoff + uint64_t(eh.e_phnum) * sizeof(ElfW(Phdr)) > end - start) {
    return "";
  }
  const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(start + eh.e_phoff);
  for (int i = 0; i < eh.e_phnum; ++i) {
    if (ph[i].p_type != PT_NOTE) continue;
    uint64_t at = bias + ph[i].p_vaddr;
    if (at < start || at > end || ph[i].p_memsz > end - at) continue;
    std::string id = BuildIdFromNotes(reinterpret_cast<const uint8_t*>(at), ph[i].p_memsz);
    if (!id.empty()) return id;
  }
  return "";
}

std::string ExecutablePath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

}  // namespace

ModuleInfo* ModuleRegistry::Lookup(uint64_t pc) {
  auto it = std::upper_bound(by_start_.begin(), by_start_.end(), pc,
                             [](uint64_t p, const Span& s) { return p < s.start; });
  if (it == by_start_.begin()) return nullptr;
  --it;
  return pc < it->end ? it->module : nullptr;
}

void ModuleRegistry::Keep(std::unique_ptr<ModuleInfo> m) {
  // A range reused after dlclose resolves to the newer object: the older one
  // leaves the index.
  by_start_.erase(
      std::remove_if(by_start_.begin(), by_start_.end(),
                     [&](const Span& s) { return s.start < m->end && m->start < s.end; }),
      by_start_.end());
  Span span{m->start, m->end, m.get()};
  by_start_.insert(std::upper_bound(by_start_.begin(), by_start_.end(), span.start,
                                    [](uint64_t p, const Span& s) { return p < s.start; }),
                   span);
  modules_.push_back(std::move(m));
}

ModuleInfo* ModuleRegistry::Find(uint64_t pc) {
  if (ModuleInfo* m = Lookup(pc)) return m;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
  // Lock-free: the caller holds the collector's mutex, and a thread inside
  // dlopen (holding the loader lock) may be waiting for that mutex from a
  // CUDA call in a library constructor; dl_iterate_phdr here could deadlock.
  dl_find_object found;
  if (_dl_find_object(reinterpret_cast<void*>(pc), &found) != 0 || !found.dlfo_link_map)
    return nullptr;
  auto m = std::make_unique<ModuleInfo>();
  m->start = reinterpret_cast<uint64_t>(found.dlfo_map_start);
  m->end = reinterpret_cast<uint64_t>(found.dlfo_map_end);
  m->bias = found.dlfo_link_map->l_addr;
  m->path = found.dlfo_link_map->l_name ? found.dlfo_link_map->l_name : "";
  if (m->path.empty()) m->path = ExecutablePath();
  m->build_id = BuildIdInMemory(m->start, m->end, m->bias);
  Keep(std::move(m));
  return modules_.back().get();
#else
  Refresh();
  return Lookup(pc);
#endif
}

void ModuleRegistry::Add(const ModuleInfo& module) {
  for (auto& k : modules_)
    if (k->start == module.start && k->end == module.end && k->bias == module.bias) return;
  auto m = std::make_unique<ModuleInfo>(module);
  m->mapping_id = 0;
  if (m->path.empty()) m->path = ExecutablePath();
  Keep(std::move(m));
}

void ModuleRegistry::Refresh() {
  std::vector<std::unique_ptr<ModuleInfo>> found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto m = std::make_unique<ModuleInfo>();
        m->bias = info->dlpi_addr;
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          uint64_t start = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD) {
            lo = std::min(lo, start);
            hi = std::max(hi, start + ph.p_memsz);
          } else if (ph.p_type == PT_NOTE && m->build_id.empty()) {
            m->build_id = BuildIdFromNotes(reinterpret_cast<const uint8_t*>(start), ph.p_memsz);
          }
        }
        if (hi <= lo) return 0;
        m->start = lo;
        m->end = hi;
        m->path = info->dlpi_name ? info->dlpi_name : "";
        static_cast<std::vector<std::unique_ptr<ModuleInfo>>*>(data)->push_back(std::move(m));
        return 0;
      },
      &found);
  for (auto& m : found) {
    bool known = false;
    for (auto& k : modules_)
      if (k->start == m->start && k->end == m->end && k->bias == m->bias) known = true;
    if (known) continue;
    // The main executable is reported with an empty name.
    if (m->path.empty()) m->path = ExecutablePath();
    Keep(std::move(m));
  }
}

std::vector<ModuleInfo> LoadedModules() {
  ModuleRegistry registry;
  registry.Refresh();
  std::vector<ModuleInfo> out;
  for (auto& m : registry.modules_) out.push_back(*m);
  return out;
}

}  // namespace tracesmith::stacks
