// A hand-built trace with exact instruction counts (SassCount rows, `profile
// --sass-counts`) and the PcLine / PcSass rows of the counted instructions,
// for the tests of the format, the analysis and the commands.
//
// Process 100, GPU 0, one stream, cubin 0xC0FFEE.
//   count_loop(float*, int) (_Z10count_loopPfi), launched twice (2 x 500 ns):
//   64 warps (2048 threads, all active) run a loop of 100 iterations.
//     +0x00 MOV R1, c[0x0][0x28]            64 /   2,048   loop.cu:10
//     +0x10 @!P0 BRA 0x70                   64 /   2,048   loop.cu:11
//     +0x20 FFMA R2, R2, R3, R4          6,400 / 204,800   loop.cu:12 (two rows: 3,200 each)
//     +0x30 FFMA R5, R2, R3, R4          6,400 / 204,800   loop.cu:12
//     +0x40 ISETP.GE.AND P0, PT, R6, 0x64, PT  6,400 / 204,800  loop.cu:11
//     +0x50 @P0 BRA 0x20                 6,400 / 204,800   loop.cu:11
//     +0x60 STG.E desc[UR4][R2.64], R5      64 /   2,048   loop.cu:13
//     +0x70 EXIT                            64 /   2,048   loop.cu:14
//     +0x80 BRA 0x80                         0 /       0   loop.cu:14
//   25,856 warp instructions, 827,392 thread instructions.
//   Opcodes: FFMA 12,800 (49.5%), BRA 6,464 (3 instructions), ISETP.GE.AND 6,400,
//   EXIT 64, MOV 64, STG.E 64.
//   copy(float const*, float*) (_Z4copyPKfPf), launched once (100 ns), no line info:
//     +0x00 (no SASS text)                 100 / 3,200
//     +0x10 LDG.E R2, desc[UR4][R2.64]     100 / 3,200
// No GPU instruction samples (--sass-counts is not combined with --pc-sampling).
#pragma once

#include <cstdint>
#include <string>

#include "testing/pc_line_rows.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

inline model::Trace SassCountTrace() {
  model::Trace t;
  const uint32_t pid = 100;
  const uint64_t crc = 0xC0FFEE;
  auto str = [&](const std::string& s) { return t.strings.Intern(s); };
  uint64_t clock = 1000;
  auto kernel = [&](const std::string& mangled, const std::string& demangled, uint64_t ns) {
    model::KernelEvent k{};
    k.start_ns = clock;
    k.end_ns = clock + ns;
    k.pid = pid;
    k.stream_id = 7;
    k.name_id = str(mangled);
    k.demangled_id = str(demangled);
    t.Rows<model::KernelEvent>().push_back(k);
    clock += ns + 10;
  };
  const std::string loop = "_Z10count_loopPfi", copy = "_Z4copyPKfPf";
  kernel(loop, "count_loop(float*, int)", 500);
  kernel(loop, "count_loop(float*, int)", 500);
  kernel(copy, "copy(float const*, float*)", 100);
  auto count = [&](const std::string& fn, uint32_t pc, uint64_t warps, uint64_t threads) {
    model::SassCount c{};
    c.pc_offset = pc;
    c.executed = warps;
    c.thread_executed = threads;
    c.pid = pid;
    c.cubin_crc = crc;
    c.function_id = str(fn);
    t.Rows<model::SassCount>().push_back(c);
  };
  auto line = [&](const std::string& fn, uint32_t pc, const std::string& file, uint32_t n) {
    AddPcLine(t, pid, crc, fn, pc, file, n);
  };
  auto sass = [&](const std::string& fn, uint32_t pc, const std::string& text) {
    AddPcSass(t, pid, crc, fn, pc, text);
  };
  const std::string file = "/src/count/loop.cu";
  struct Row {
    uint32_t pc;
    const char* text;
    uint64_t warps;
    uint32_t line;
  };
  for (const Row& r :
       {Row{0x00, "MOV R1, c[0x0][0x28]", 64, 10}, Row{0x10, "@!P0 BRA 0x70", 64, 11},
        Row{0x20, "FFMA R2, R2, R3, R4", 6400, 12}, Row{0x30, "FFMA R5, R2, R3, R4", 6400, 12},
        Row{0x40, "ISETP.GE.AND P0, PT, R6, 0x64, PT", 6400, 11},
        Row{0x50, "@P0 BRA 0x20", 6400, 11}, Row{0x60, "STG.E desc[UR4][R2.64], R5", 64, 13},
        Row{0x70, "EXIT", 64, 14}, Row{0x80, "BRA 0x80", 0, 14}}) {
    if (r.pc == 0x20) {  // two flushes' rows of one instruction add up
      count(loop, r.pc, r.warps / 2, r.warps / 2 * 32);
      count(loop, r.pc, r.warps / 2, r.warps / 2 * 32);
    } else {
      count(loop, r.pc, r.warps, r.warps * 32);
    }
    line(loop, r.pc, file, r.line);
    sass(loop, r.pc, r.text);
  }
  count(copy, 0x00, 100, 3200);
  count(copy, 0x10, 100, 3200);
  line(copy, 0x00, "", 0);
  line(copy, 0x10, "", 0);
  sass(copy, 0x10, "LDG.E R2, desc[UR4][R2.64]");
  return t;
}

}  // namespace tracesmith::testing
