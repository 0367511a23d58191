// StackCollector::PrepareModules: the first-time work of new modules done on
// the writer thread, ahead of the program's launches (docs/capture.md,
// "First-time work off the program's threads").
//
// A return address seen for the first time costs the launching thread its
// unwind rule (unwinder.cc), read from the module's .eh_frame_hdr (a binary
// search) and .eh_frame (one CIE and FDE). In a library of hundreds of MB
// those pages are not mapped into the process yet, often not read from disk
// yet either: a rule that costs 0.6 us with its pages mapped cost 4-8 ms on
// the first touch of a cold page (libLLVM, docs/benchmarks.md). Faulting the
// two sections in here, with MADV_POPULATE_READ (Linux 5.14; MADV_WILLNEED's
// read-ahead before it), leaves the launching thread the rule's CPU work
// only. The module is also registered (path, build-id: its ELF notes read),
// which the first stack through it would otherwise do under the collector's
// lock.
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>

#include <cerrno>
#include <string>

#include "module_registry.h"
#include "stack_collector_internal.h"
#include "tracesmith/base/clock.h"
#include "unwind_rule.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 (older headers lack it)
#endif

namespace tracesmith::stacks {
namespace {

// Faults [from, to) in (page-rounded); the bytes covered. madvise, not a
// loop of loads: a range unmapped meanwhile (a dlclose) answers ENOMEM
// instead of faulting.
uint64_t Prefault(uintptr_t from, uintptr_t to) {
  from &= ~uintptr_t{4095};
  to = (to + 4095) & ~uintptr_t{4095};
  if (to <= from) return 0;
  void* at = reinterpret_cast<void*>(from);
  if (madvise(at, to - from, MADV_POPULATE_READ) == 0) return to - from;
  if (errno == EINVAL && madvise(at, to - from, MADV_WILLNEED) == 0) return to - from;
  return 0;
}

struct LoadedTables {
  uintptr_t hdr = 0;  // .eh_frame_hdr, from PT_GNU_EH_FRAME
  size_t hdr_size = 0;
  std::string name;  // the loader's; "" for the executable
};

// Keeps the module whose .eh_frame_hdr is `t.hdr` loaded while its tables are
// read (a dlclose meanwhile would unmap them under the reads): a reference
// taken with RTLD_NOLOAD, by the name the loader knows it by (nothing is
// loaded), and the header checked to be that module's still. The executable
// is never unloaded. False: gone, or not to be pinned (the vDSO).
bool Pin(const LoadedTables& t, void** handle) {
  *handle = nullptr;
  if (!t.name.empty()) {
    *handle = dlopen(t.name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!*handle) return false;
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
  dl_find_object found;
  if (_dl_find_object(reinterpret_cast<void*>(t.hdr), &found) != 0 ||
      reinterpret_cast<uintptr_t>(found.dlfo_eh_frame) != t.hdr) {
    if (*handle) dlclose(*handle);
    return false;
  }
#endif
  return true;
}

}  // namespace

void StackCollector::PrepareModules() {
  const double t0 = ThreadCpuSeconds();
  if (prepared_adds_ == 0) PrepareRuleCache();
  // The loader's list, unless nothing was loaded since the last call
  // (dlpi_adds counts loads). Not under mu_: dl_iterate_phdr takes the
  // loader's lock (see ModuleRegistry::Find).
  struct Scan {
    uint64_t seen_adds;
    uint64_t adds = 0;
    bool unchanged = false;
    std::vector<LoadedTables> tables;
  } scan{prepared_adds_};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) -> int {
        auto* s = static_cast<Scan*>(data);
        if (size >= offsetof(dl_phdr_info, dlpi_subs) && s->tables.empty() && !s->unchanged) {
          s->adds = info->dlpi_adds;
          if (s->adds == s->seen_adds) {
            s->unchanged = true;
            return 1;
          }
        }
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_GNU_EH_FRAME && ph.p_memsz >= 4)
            s->tables.push_back({info->dlpi_addr + ph.p_vaddr, size_t(ph.p_memsz),
                                 info->dlpi_name ? info->dlpi_name : ""});
        }
        return 0;
      },
      &scan);
  if (scan.unchanged) return;
  uint64_t modules = 0, bytes = 0;
  for (const LoadedTables& t : scan.tables) {
    if (prepared_tables_.count(t.hdr)) continue;
    void* handle;
    if (!Pin(t, &handle)) continue;
    prepared_tables_.insert(t.hdr);
    ++modules;
    bytes += Prefault(t.hdr, t.hdr + t.hdr_size);
    uintptr_t begin = 0, end = 0;
    if (EhFrameExtent(t.hdr, t.hdr_size, &begin, &end)) bytes += Prefault(begin, end);
    {
      std::lock_guard<std::mutex> lock(mu_);
      (void)modules_->Find(t.hdr);
    }
    if (handle) dlclose(handle);
  }
  prepared_adds_ = scan.adds;
  const uint64_t ns = uint64_t((ThreadCpuSeconds() - t0) * 1e9);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.modules_prepared += modules;
  stats_.unwind_bytes_prepared += bytes;
  stats_.prepare_cpu_ns += ns;
}

}  // namespace tracesmith::stacks
