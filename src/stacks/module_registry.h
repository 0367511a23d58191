// ModuleRegistry: the loaded ELF objects (executable, shared libraries) that
// native frames point into, with the path and GNU build-id that offline
// symbolization needs. Slow path only: callers hold the collector's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tracesmith::stacks {

struct ModuleInfo {
  uint64_t start = 0, end = 0;  // run-time address range of the PT_LOAD segments
  uint64_t bias = 0;            // load bias: ELF vaddr = address - bias
  std::string path;             // absolute where the loader knows it
  std::string build_id;         // lowercase hex; empty when the object has none
  uint32_t mapping_id = 0;      // assigned by the collector; 0 = not yet
};

class ModuleRegistry {
 public:
  // The module containing `pc`, rescanning the loader's list once when no
  // known module contains it (a library dlopen'ed since). nullptr: none.
  ModuleInfo* Find(uint64_t pc);
  // Registers a module found ahead (StackCollector::PrepareModules), unless
  // one with the same range and bias is known; an empty path is the
  // executable's. The first stack through it then finds it here.
  void Add(const ModuleInfo& module);

 private:
  ModuleInfo* Lookup(uint64_t pc);
  void Refresh();
  // Takes `m` and indexes it; a module it overlaps (unloaded: its range reused) leaves the index.
  void Keep(std::unique_ptr<ModuleInfo> m);
  friend std::vector<ModuleInfo> LoadedModules();
  std::vector<std::unique_ptr<ModuleInfo>> modules_;  // every module seen, in order
  // The live ones by start, ranges disjoint: a binary search for a new frame's module instead of
  // a scan of every module (hundreds in a PyTorch process), under the lock.
  struct Span {
    uint64_t start, end;
    ModuleInfo* module;
  };
  std::vector<Span> by_start_;
};

// The loaded modules now (dl_iterate_phdr; takes the loader's lock).
std::vector<ModuleInfo> LoadedModules();

}  // namespace tracesmith::stacks
