// ts_stacks_first_time_bench: the launching thread's first-time work in a
// cold process, by part (docs/benchmarks.md, "First-time work"). Not a test:
// figures to compare before and after a change.
//
//   ts_stacks_first_time_bench [--prepare] [--evict] [LIBRARY]
//
// 1. A thread's first stack: 20 new threads, each capturing one stack (its
//    stack bounds, its walk memo, its first capture), in this process with
//    0, 2,000 and 8,000 more mappings (a large CUDA process has thousands);
//    and what reading /proc/self/maps for the bounds (FindMappingOf, the
//    method before 2026-11-30) costs such a thread. --prepare: a walk memo
//    prepared ahead for each (PrepareWalkMemos, the writer's every poll).
// 2. Cold stacks through a large library (default libLLVM-14, ~100 MB, as
//    libtorch's are large): 50 "stacks" of 40 return addresses never seen,
//    each rule computed as the unwinder does for a new return address
//    (FindEhFrameHdr + ComputeRuleFromEhFrameHdr); per rule and per stack of
//    40. --prepare: StackCollector::PrepareModules first (as the writer does
//    at the capture's start; its own time shown apart). --evict: the
//    library's pages dropped from the page cache first (a cold machine).
// Median and maximum, in us (wall time: page faults and waits included).
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "stacks/proc_maps.h"
#include "stacks/unwind_rule.h"
#include "tracesmith/base/clock.h"
#include "tracesmith/base/first_time_cost.h"
#include "tracesmith/stacks/stack_collector.h"
#include "tracesmith/stacks/unwinder.h"

namespace ts = tracesmith;
using namespace tracesmith::stacks;

namespace {

double g_ns_per_tick = 0;

void Report(const char* what, std::vector<double> us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  std::printf("%-58s n=%-5zu median=%9.2f us  max=%9.2f us\n", what, us.size(), us[us.size() / 2],
              us.back());
}

[[gnu::noinline]] uint32_t Deep(StackCollector* c, int depth) {
  uint32_t id = depth == 0 ? c->CaptureStack() : Deep(c, depth - 1);
  asm volatile("" : "+r"(id));
  return id;
}

void ThreadFirstStacks(StackCollector* collector, bool prepare) {
  std::vector<void*> extra;
  for (int more : {0, 2000, 8000}) {
    // Two mappings each: a page made PROT_NONE splits an anonymous mapping.
    while (int(extra.size()) < more / 2) {
      void* p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      mprotect(p, 4096, PROT_NONE);
      extra.push_back(p);
    }
    std::vector<double> first, maps;
    for (int i = 0; i < 20; ++i) {
      if (prepare) PrepareWalkMemos();  // the writer's, every poll
      std::thread([&] {
        const uint64_t f0 = ts::t_first_time_ticks;
        (void)Deep(collector, 30);
        first.push_back(double(ts::t_first_time_ticks - f0) * g_ns_per_tick / 1e3);
        MappingOf m;
        const uint64_t t0 = ts::CpuTicks();
        (void)FindMappingOf(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)), &m);
        maps.push_back(double(ts::CpuTicks() - t0) * g_ns_per_tick / 1e3);
      }).join();
    }
    char what[120];
    std::snprintf(what, sizeof what, "thread's first stack, first-time work (+%d mappings)", more);
    Report(what, first);
    std::snprintf(what, sizeof what, "  /proc/self/maps read for its bounds (+%d mappings)", more);
    Report(what, maps);
  }
}

void ColdRules(const char* path, bool prepare, bool evict, StackCollector* collector) {
  if (evict) {
    int fd = open(path, O_RDONLY);
    if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
      std::printf("(could not evict %s from the page cache)\n", path);
    if (fd >= 0) close(fd);
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::printf("cold rules: %s not loaded (%s): skipped\n", path, dlerror());
    return;
  }
  if (prepare) {
    const double t0 = ts::ThreadCpuSeconds();
    const uint64_t w0 = ts::CpuTicks();
    collector->PrepareModules();
    StackCollectorStats s = collector->stats();
    std::printf(
        "PrepareModules (the writer's, at start): %.1f ms wall, %.1f ms CPU, %llu modules, "
        "%.1f MB of unwind tables\n",
        double(ts::CpuTicks() - w0) * g_ns_per_tick / 1e6, (ts::ThreadCpuSeconds() - t0) * 1e3,
        (unsigned long long)s.modules_prepared, double(s.unwind_bytes_prepared) / 1e6);
  }
  // Return addresses: 3 bytes into random functions of the library (its
  // FDE table read through _dl_find_object's header address).
  dl_find_object found{};
  void* any = nullptr;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* out = static_cast<void**>(data);
        if (info->dlpi_name && std::strstr(info->dlpi_name, "libLLVM")) {
          for (int i = 0; i < info->dlpi_phnum; ++i)
            if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X))
              *out = reinterpret_cast<void*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        }
        return 0;
      },
      &any);
  if (!any) any = dlsym(lib, "LLVMContextCreate");
  if (!any || _dl_find_object(any, &found) != 0 || !found.dlfo_eh_frame) {
    std::printf("cold rules: no .eh_frame_hdr found in %s: skipped\n", path);
    return;
  }
  const auto* hdr = static_cast<const uint8_t*>(found.dlfo_eh_frame);
  uint32_t count;
  std::memcpy(&count, hdr + 8, 4);  // (version 1, udata4 count: what ld writes)
  const auto* table = reinterpret_cast<const int32_t*>(hdr + 12);
  std::mt19937_64 rng(42);
  constexpr int kStacks = 50, kDepth = 40;
  std::vector<double> rule, stack;
  struct rusage u0, u1;
  getrusage(RUSAGE_THREAD, &u0);
  for (int s = 0; s < kStacks; ++s) {
    uint64_t sum = 0;
    for (int d = 0; d < kDepth; ++d) {
      const uintptr_t pc = uintptr_t(hdr) + uintptr_t(intptr_t(table[2 * (rng() % count)])) + 3;
      const uint64_t t0 = ts::CpuTicks();
      UnwindRule r = ComputeRuleFromEhFrameHdr(FindEhFrameHdr(pc), pc);
      const uint64_t t = ts::CpuTicks() - t0;
      asm volatile("" : : "r"(r.cfa_offset));
      rule.push_back(double(t) * g_ns_per_tick / 1e3);
      sum += t;
    }
    stack.push_back(double(sum) * g_ns_per_tick / 1e3);
  }
  getrusage(RUSAGE_THREAD, &u1);
  std::printf("cold rules in %s (%u FDEs)%s%s:\n", path, count, prepare ? ", prepared" : "",
              evict ? ", evicted from the page cache first" : "");
  Report("  one new return address's rule", rule);
  Report("  a stack of 40 new return addresses (its rules)", stack);
  // A maximum with no fault is the thread preempted (the machine is shared).
  std::printf("  meanwhile: %ld minor + %ld major page faults, %ld involuntary switches\n",
              u1.ru_minflt - u0.ru_minflt, u1.ru_majflt - u0.ru_majflt,
              u1.ru_nivcsw - u0.ru_nivcsw);
}

}  // namespace

int main(int argc, char** argv) {
  bool prepare = false, evict = false;
  const char* lib = "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--prepare"))
      prepare = true;
    else if (!std::strcmp(argv[i], "--evict"))
      evict = true;
    else
      lib = argv[i];
  }
  ts::TickRate rate = ts::TickRate::Start();
  usleep(20000);
  g_ns_per_tick = rate.NsPerTick();
  StackCollectorOptions options;
  options.mode = StackMode::kNative;
  StackCollector collector(options);
  ColdRules(lib, prepare, evict, &collector);
  ThreadFirstStacks(&collector, prepare);
  return 0;
}
