// A hand-built trace for the kernel page of one launch (analysis/kernel_page.h,
// `kernel --launch N`): one sampled function whose launches and drain windows
// are placed so that each launch's samples are known.
//
// Process 100, function hotK ("_Z4hotKv", demangled "hotK()"), file k.cu:
//   launch 11  stream 7  [10.0, 11.0] ms   alone in window W1
//   launch 12  stream 7  [30.0, 31.0] ms   shares W2 with launch 13 (1 ms each: half each)
//   launch 13  stream 8  [30.5, 31.5] ms
//   launch 14  stream 7  [50.0, 51.0] ms   no window overlaps it
//   launch 15  stream 7  [60.0, 60.1] ms   other() ("_Z5otherv"): not sampled
// W1 = [11.5, 12.0] ms (joined to [9.5, 12.0]: launches end there up to 2 ms
// before a drain): +0x10 (k.cu:5) wait 100; +0x20 (k.cu:6) selected 20 and
// selected_not_issued 10 (a subset, not counted).
// W2 = [31.8, 32.0] ms: +0x30 (k.cu:7) long_scoreboard 200; +0x10 wait 40.
// So launch 11 has 120 samples (k.cu:5 100, k.cu:6 20; wait 83.3%), launch 12
// and 13 120 each (k.cu:7 100, k.cu:5 20; long_scoreboard 83.3%), and the
// function 360.
//
// `offset_ns` moves every time of process 100; `second_process` adds process
// 200 with a kernel of its own and ClockAnchor rows for both, so that the
// analysis puts them on one clock (100's times move by `anchor_shift_ns`).
#pragma once

#include <cstdint>
#include <string>

#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

struct LaunchSampleTraceOptions {
  bool second_process = false;
  uint64_t anchor_shift_ns = 5'000'000'000;  // process 100's realtime - capture clock
};

inline model::Trace LaunchSampleTrace(const LaunchSampleTraceOptions& o = {}) {
  model::Trace t;
  auto str = [&](const std::string& s) { return t.strings.Intern(s); };
  constexpr uint64_t kMs = 1'000'000;
  auto kernel = [&](uint32_t pid, uint32_t corr, uint32_t stream, uint64_t start, uint64_t end,
                    const std::string& mangled, const std::string& demangled) {
    model::KernelEvent k{};
    k.start_ns = start;
    k.end_ns = end;
    k.correlation_id = corr;
    k.pid = pid;
    k.stream_id = stream;
    k.name_id = str(mangled);
    k.demangled_id = str(demangled);
    t.Rows<model::KernelEvent>().push_back(k);
  };
  kernel(100, 11, 7, 10 * kMs, 11 * kMs, "_Z4hotKv", "hotK()");
  kernel(100, 12, 7, 30 * kMs, 31 * kMs, "_Z4hotKv", "hotK()");
  kernel(100, 13, 8, 30 * kMs + kMs / 2, 31 * kMs + kMs / 2, "_Z4hotKv", "hotK()");
  kernel(100, 14, 7, 50 * kMs, 51 * kMs, "_Z4hotKv", "hotK()");
  kernel(100, 15, 7, 60 * kMs, 60 * kMs + kMs / 10, "_Z5otherv", "other()");
  const std::string stalled = "smsp__pcsamp_warps_issue_stalled_";
  auto sample = [&](uint64_t from, uint64_t to, uint32_t pc, const std::string& reason,
                    uint64_t n) {
    model::PcSampleEvent e{};
    e.start_ns = from;
    e.end_ns = to;
    e.samples = n;
    e.pc_offset = pc;
    e.pid = 100;
    e.cubin_crc = 0xABC;
    e.function_id = str("_Z4hotKv");
    e.stall_id = str(stalled + reason);
    t.Rows<model::PcSampleEvent>().push_back(e);
  };
  const uint64_t w1a = 11 * kMs + kMs / 2, w1b = 12 * kMs;
  const uint64_t w2a = 31 * kMs + 8 * kMs / 10, w2b = 32 * kMs;
  sample(w1a, w1b, 0x10, "wait", 100);
  sample(w1a, w1b, 0x20, "selected", 20);
  sample(w1a, w1b, 0x20, "selected_not_issued", 10);
  sample(w2a, w2b, 0x30, "long_scoreboard", 200);
  sample(w2a, w2b, 0x10, "wait", 40);
  for (auto [pc, line] : {std::pair{0x10u, 5u}, {0x20u, 6u}, {0x30u, 7u}}) {
    model::PcLine l{};
    l.pc_offset = pc;
    l.line = line;
    l.pid = 100;
    l.cubin_crc = 0xABC;
    l.function_id = str("_Z4hotKv");
    l.file_id = str("/src/k.cu");
    t.Rows<model::PcLine>().push_back(l);
  }
  if (o.second_process) {
    kernel(200, 11, 3, 20 * kMs, 21 * kMs, "_Z4hotKv", "hotK()");
    model::ClockAnchor a{};
    a.pid = 100;
    a.gpu_ns = 1;
    a.realtime_ns = 1 + o.anchor_shift_ns;
    t.Rows<model::ClockAnchor>().push_back(a);
    a.pid = 200;
    a.realtime_ns = 1 + o.anchor_shift_ns + 10 * kMs;  // 200's clock is 10 ms behind
    t.Rows<model::ClockAnchor>().push_back(a);
  }
  return t;
}

}  // namespace tracesmith::testing
