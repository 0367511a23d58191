// A hand-built trace with GPU instruction samples (PcSampleEvent, PcLine) for
// the tests of the analysis and of the commands: three kernels whose samples
// per stall reason, instruction and source line are known, modelled on what
// the H200 probe measured (docs/pc-sampling.md).
//
// Process 100, one GPU stream; each kernel launched twice (half its time each).
//   probe_mem  (400 ns of 1000: 40%)  1000 samples: long_scoreboard 760, lg_throttle 220,
//              selected 20; kernels.cu:42 810, kernels.cu:40 170, no PcLine row 20;
//              plus 300 long_scoreboard_not_issued (a subset: not counted).
//   probe_fma  (300 ns: 30%)          1000 samples: wait 550, selected 200, not_selected 150,
//              math_pipe_throttle 100; its PcLine rows have no file (no -lineinfo).
//   probe_hot  (300 ns: 30%)          2000 samples: wait 900, selected 700,
//              short_scoreboard 400; kernels.cu:66 1994, kernels.cu:60 6.
// 4000 samples in all. Every (instruction, reason) count is split over two drain windows.
// The options move the figures to the findings' thresholds.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

#include "testing/pc_line_rows.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

struct PcSampleTraceOptions {
  uint64_t mem_ns = 400, fma_ns = 300, hot_ns = 300;  // each kernel's GPU time
  uint64_t hot_wait = 900;  // probe_hot's wait samples; its selected ones are 1600 - this
  bool samples = true;      // false: the same trace without PcSampleEvent rows
};

inline model::Trace PcSampleTrace(const PcSampleTraceOptions& o = {}) {
  model::Trace t;
  const uint32_t pid = 100;
  const uint64_t crc = 0xC0FFEE;
  auto str = [&](const std::string& s) { return t.strings.Intern(s); };
  const std::string stalled = "smsp__pcsamp_warps_issue_stalled_";
  uint64_t clock = 1000;
  auto kernel = [&](const std::string& mangled, const std::string& demangled, uint64_t ns) {
    for (uint64_t part : {ns / 2, ns - ns / 2}) {
      model::KernelEvent k{};
      k.start_ns = clock;
      k.end_ns = clock + part;
      k.pid = pid;
      k.device_id = 0;
      k.stream_id = 7;
      k.name_id = str(mangled);
      k.demangled_id = str(demangled);
      t.Rows<model::KernelEvent>().push_back(k);
      clock += part + 10;
    }
  };
  kernel("_Z9probe_memPKfPfi", "probe_mem(float const*, float*, int)", o.mem_ns);
  kernel("_Z9probe_fmaPfi", "probe_fma(float*, int)", o.fma_ns);
  kernel("_Z9probe_hotPfi", "probe_hot(float*, int)", o.hot_ns);
  const uint64_t end = clock;
  auto sample = [&](const std::string& fn, uint32_t pc, const std::string& reason, uint64_t n) {
    if (!o.samples || n == 0) return;
    // Two drain windows, each with part of the samples.
    for (auto [from, to, part] :
         {std::tuple{uint64_t{0}, end / 2, n / 3}, std::tuple{end / 2, end, n - n / 3}}) {
      if (part == 0) continue;
      model::PcSampleEvent e{};
      e.start_ns = from;
      e.end_ns = to;
      e.samples = part;
      e.pc_offset = pc;
      e.pid = pid;
      e.cubin_crc = crc;
      e.function_id = str(fn);
      e.stall_id = str(stalled + reason);
      t.Rows<model::PcSampleEvent>().push_back(e);
    }
  };
  auto line = [&](const std::string& fn, uint32_t pc, const std::string& file, uint32_t n) {
    AddPcLine(t, pid, crc, fn, pc, file, n);
  };
  const std::string mem = "_Z9probe_memPKfPfi", fma = "_Z9probe_fmaPfi", hot = "_Z9probe_hotPfi";
  const std::string file = "/src/probe/kernels.cu";
  sample(mem, 0x100, "long_scoreboard", 600);
  sample(mem, 0x100, "lg_throttle", 210);
  sample(mem, 0x100, "long_scoreboard_not_issued", 300);
  sample(mem, 0x180, "long_scoreboard", 160);
  sample(mem, 0x180, "selected", 10);
  sample(mem, 0x200, "lg_throttle", 10);  // no PcLine row
  sample(mem, 0x200, "selected", 10);
  line(mem, 0x100, file, 42);
  line(mem, 0x180, file, 40);
  sample(fma, 0x40, "wait", 550);
  sample(fma, 0x40, "selected", 100);
  sample(fma, 0x50, "selected", 100);
  sample(fma, 0x50, "not_selected", 150);
  sample(fma, 0x50, "math_pipe_throttle", 100);
  line(fma, 0x40, "", 0);  // compiled without -lineinfo
  line(fma, 0x50, "", 0);
  sample(hot, 0x300, "wait", o.hot_wait);
  sample(hot, 0x300, "selected", 1600 - o.hot_wait - 6);
  sample(hot, 0x300, "short_scoreboard", 400);
  sample(hot, 0x310, "selected", 6);
  line(hot, 0x300, file, 66);
  line(hot, 0x310, file, 60);
  return t;
}

}  // namespace tracesmith::testing
