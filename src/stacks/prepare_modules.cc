// StackCollector::PrepareModules: the first-time work of new modules done on
// the writer thread, ahead of the program's launches (docs/capture.md,
// "First-time work off the program's threads").
//
// A return address seen for the first time costs the launching thread its
// unwind rule (unwinder.cc), read from the module's .eh_frame_hdr (a binary
// search) and .eh_frame (one CIE and FDE). In a library of hundreds of MB
// those pages are not mapped into the process yet, often not read from disk
// yet either: a rule that costs 0.4 us with its pages mapped cost up to 4 ms
// on the first touch of a cold page (libLLVM, docs/benchmarks.md). Faulting
// the two sections in here, with MADV_POPULATE_READ (Linux 5.14;
// MADV_WILLNEED's read-ahead before it), leaves the launching thread the
// rule's CPU work only. The module is also registered (path, build-id from
// its ELF notes: 10-30 us each), which the first stack through it would
// otherwise do on the launching thread, under the collector's lock.
//
// A module may be unloaded (dlclose) while this runs: its memory is only ever
// touched through calls that answer an error instead of faulting (madvise,
// process_vm_readv), and no loader lock is held meanwhile, so a long dlopen
// in the program does not hold the writer up either (dl_iterate_phdr takes
// only the lock that guards the list, which dlopen holds to add to it).
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fde_index.h"
#include "module_registry.h"
#include "stack_collector_internal.h"
#include "tracesmith/base/clock.h"
#include "tracesmith/stacks/build_id.h"
#include "unwind_rule.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 (older headers lack it)
#endif

namespace tracesmith::stacks {
namespace {

// Faults [from, to) in (page-rounded); the bytes covered. madvise, not a
// loop of loads: a range unmapped meanwhile answers ENOMEM.
uint64_t Prefault(uintptr_t from, uintptr_t to) {
  from &= ~uintptr_t{4095};
  to = (to + 4095) & ~uintptr_t{4095};
  if (to <= from) return 0;
  void* at = reinterpret_cast<void*>(from);
  if (madvise(at, to - from, MADV_POPULATE_READ) == 0) return to - from;
  if (errno == EINVAL && madvise(at, to - from, MADV_WILLNEED) == 0) return to - from;
  return 0;
}

// n bytes of this process's memory at `from`, or false (unmapped meanwhile,
// or process_vm_readv refused).
bool CopyOwn(void* to, uintptr_t from, size_t n) {
  iovec local{to, n};
  iovec remote{reinterpret_cast<void*>(from), n};
  return syscall(SYS_process_vm_readv, pid_t(syscall(SYS_getpid)), &local, 1, &remote, 1, 0) ==
         ssize_t(n);
}

// The length field of the CIE or FDE at `at`: where the record ends, or 0.
uintptr_t RecordEndAt(uintptr_t at) {
  uint32_t len;
  if (!CopyOwn(&len, at, 4) || len == 0) return 0;
  if (len != 0xffffffffu) return at + 4 + len;
  uint64_t len64;
  if (!CopyOwn(&len64, at + 4, 8) || len64 > (uint64_t{1} << 30)) return 0;
  return at + 12 + uintptr_t(len64);
}

// A loaded object as dl_iterate_phdr describes it (copied under the lock
// that guards the loader's list; its memory is read later, safely).
struct LoadedTables {
  ModuleInfo module;  // range, bias, path; build-id read later
  uintptr_t hdr = 0;  // .eh_frame_hdr, from PT_GNU_EH_FRAME (0: none)
  size_t hdr_size = 0;
  std::vector<std::pair<uintptr_t, size_t>> notes;  // PT_NOTE segments
};

// The GNU build-id from the module's notes, read through copies.
std::string BuildIdOf(const LoadedTables& t) {
  for (const auto& [at, size] : t.notes) {
    if (size == 0 || size > (size_t{1} << 16)) continue;
    std::vector<uint8_t> copy(size);
    if (!CopyOwn(copy.data(), at, size)) continue;
    std::string id = BuildIdFromNotes(copy.data(), size);
    if (!id.empty()) return id;
  }
  return "";
}

// The .eh_frame part that the header indexes, faulted in; its bytes. And the
// header's search table indexed by page (fde_index.h) from the same copy.
uint64_t PrefaultEhFrame(const LoadedTables& t) {
  std::vector<uint8_t> copy(t.hdr_size);
  uintptr_t begin = 0, last_fde = 0, end = 0;
  if (!CopyOwn(copy.data(), t.hdr, t.hdr_size) ||
      !EhFrameTableSpan(copy.data(), copy.size(), t.hdr, &begin, &last_fde) ||
      !(end = RecordEndAt(last_fde)))
    return 0;
  uintptr_t eh_frame = 0;
  const int32_t* table = nullptr;
  uint64_t count = 0;
  if (EhFrameHdrTable(copy.data(), copy.size(), t.hdr, &eh_frame, &table, &count))
    BuildFdeIndex(t.hdr, table, count);
  return Prefault(begin, end);
}

}  // namespace

void StackCollector::PrepareModules() {
  const double t0 = ThreadCpuSeconds();
  if (prepared_adds_ == 0) PrepareRuleCache();
  // The loader's list, unless nothing was loaded since the last call
  // (dlpi_adds counts loads). Not under mu_ (see ModuleRegistry::Find).
  struct Scan {
    uint64_t seen_adds;
    uint64_t adds = 0, subs = 0;
    bool unchanged = false;
    std::vector<LoadedTables> tables;
  } scan{prepared_adds_};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) -> int {
        auto* s = static_cast<Scan*>(data);
        if (size >= offsetof(dl_phdr_info, dlpi_subs) && s->tables.empty() && !s->unchanged) {
          s->adds = info->dlpi_adds;
          s->subs = info->dlpi_subs;
          if (s->adds == s->seen_adds) {
            s->unchanged = true;
            return 1;
          }
        }
        LoadedTables t;
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t at = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD) {
            lo = at < lo ? at : lo;
            hi = at + ph.p_memsz > hi ? at + ph.p_memsz : hi;
          } else if (ph.p_type == PT_GNU_EH_FRAME && ph.p_memsz >= 12) {
            t.hdr = at;
            t.hdr_size = size_t(ph.p_memsz);
          } else if (ph.p_type == PT_NOTE && t.notes.size() < 4) {
            t.notes.emplace_back(at, size_t(ph.p_memsz));
          }
        }
        if (hi <= lo) return 0;
        t.module.start = lo;
        t.module.end = hi;
        t.module.bias = info->dlpi_addr;
        t.module.path = info->dlpi_name ? info->dlpi_name : "";
        s->tables.push_back(std::move(t));
        return 0;
      },
      &scan);
  if (scan.unchanged) return;
  // A module unloaded since: another may be at its address now.
  if (scan.subs != prepared_subs_) prepared_tables_.clear();
  prepared_subs_ = scan.subs;
  uint64_t modules = 0, bytes = 0;
  for (LoadedTables& t : scan.tables) {
    if (!prepared_tables_.insert(t.module.start).second) continue;
    ++modules;
    if (t.hdr) bytes += Prefault(t.hdr, t.hdr + t.hdr_size) + PrefaultEhFrame(t);
    t.module.build_id = BuildIdOf(t);
    std::lock_guard<std::mutex> lock(mu_);
    modules_->Add(t.module);
  }
  prepared_adds_ = scan.adds;
  const uint64_t ns = uint64_t((ThreadCpuSeconds() - t0) * 1e9);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.modules_prepared += modules;
  stats_.unwind_bytes_prepared += bytes;
  stats_.prepare_cpu_ns += ns;
}

}  // namespace tracesmith::stacks
