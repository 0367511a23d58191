// CaptureCost: what a capture cost the profiled program, from the
// capture.cost.* stats the capture writes at its end (tracesmith/capture/capture_cost.h):
// time spent in TraceSmith's callbacks on the program's threads, per site and
// per kernel launch, where stack capture spent it, and the writer thread's
// CPU time. CUPTI's own work inside the CUDA calls is not in it (nothing
// inside the process can see it); docs/benchmarks.md measures that against
// bare CUPTI.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

struct CaptureCost {
  struct Part {
    std::string name;    // "launch", "sync", "stack.unwind", "writer.convert", ...
    double ns = 0;       // estimated total
    uint64_t calls = 0;  // 0 for writer phases
    // One timed call (0 in traces from before these stats): median, 99th
    // percentile, and the share of the time spent in calls of 10 us and
    // more (a tail of rare slow calls rather than a typical cost).
    double p50_ns = 0, p99_ns = 0, slow_share = 0;
    // The 99.9th percentile, the slowest call and the calls of 100 us and
    // more (0 in traces from before every call was timed).
    double p999_ns = 0, max_ns = 0;
    uint64_t over_100us = 0;
    bool has_max = false;  // max_ns was recorded
    // With TRACESMITH_SLOW_CALL_PROBE=1 (a diagnostic): the calls of 100 us
    // or more by what happened to their thread ("preempted", "blocked",
    // "faulted", "interrupted", "unexplained"), non-zero classes only.
    std::vector<std::pair<std::string, uint64_t>> slow_classes;
  };
  // CUPTI's own work inside the program's CUDA calls, from its overhead
  // rows (CUPTI_ACTIVITY_KIND_OVERHEAD), per kind: not TraceSmith's
  // callbacks, but what CUPTI spent around them ("activity buffer request",
  // "resource", "lazy function loading", ...).
  struct Overhead {
    std::string kind;
    uint64_t count = 0;
    double total_ns = 0, max_ns = 0;
    bool own = false;  // TraceSmith's (model::IsOwnOverheadKind), not CUPTI's
  };
  uint32_t pid = 0;
  uint64_t kernels = 0;          // kernel rows of the process in the trace
  double first_time_max_ns = 0;  // the longest single piece of first-time work
  // The most first-time work in one callback (its pieces added up); 0: not
  // recorded (traces before 2026-11-30).
  double first_time_call_max_ns = 0;
  // First-time work by kind (base/first_time_cost.h: bounds, memo, rule, intern, ring): pieces,
  // time, the longest piece, and the kind's part of the callback with the most (all empty in
  // traces before 2026-12-01).
  struct FirstTimeKindCost {
    std::string kind;
    uint64_t calls = 0;
    double ns = 0, max_ns = 0, in_call_max_ns = 0;
  };
  std::vector<FirstTimeKindCost> first_time_kinds;  // as base/first_time_cost.h lists them
  std::vector<Overhead> cupti;                      // by longest single row first
  std::vector<Overhead> own;  // TraceSmith's own rows (PC sampling drains), likewise
  double program_ns = 0;      // all callback sites on the program's threads
  double first_time_ns = 0;   // of which work done once per new address or stack
  double writer_cpu_ns = 0;
  std::vector<Part> sites;   // program-thread sites, largest first
  std::vector<Part> stack;   // stack capture and its phases (unwind, python, dedup)
  std::vector<Part> writer;  // writer phases, largest first
  double native_frames = 0, python_frames = 0;  // mean per stack
  double copy_bytes = 0;  // diagnostic stack.copy: mean bytes per copy (0: not run)
  // The native walk memo: walks replayed whole / in part / not at all, and
  // frames replayed vs unwound (all 0 in traces from before it).
  uint64_t memo_hits = 0, memo_partial = 0, memo_misses = 0;
  uint64_t memo_frames_replayed = 0, memo_frames_walked = 0;

  // Program-thread cost per kernel launch, in us (0 without kernels).
  double UsPerLaunch() const { return kernels ? program_ns / 1e3 / double(kernels) : 0; }
};

// CUPTI's overhead rows per process and kind, tallied as rows stream past.
using OverheadTally = std::map<uint32_t, std::map<std::string, CaptureCost::Overhead>>;
void TallyOverhead(const model::OverheadEvent& row, OverheadTally* tally);

// One entry per process that wrote capture.cost.* stats (empty for traces
// from captures before they existed, and for imports).
std::vector<CaptureCost> ComputeCaptureCost(const model::Trace& trace);
// The same from the trace's Stat rows, its kernel count per pid and its
// overhead rows' tally (for a caller that streamed the events instead of
// keeping them).
std::vector<CaptureCost> ComputeCaptureCost(const model::Trace& stats,
                                            const std::map<uint32_t, uint64_t>& kernels,
                                            const OverheadTally& overheads = {});

// "capture cost: 0.42 us per launch on the program's threads (12.6 ms in
// all), 85.1 ms CPU in the writer"
std::string CaptureCostLine(const CaptureCost& cost);
// The biggest contributors, one per line: sites, stack phases, writer phases.
std::vector<std::string> CaptureCostDetails(const CaptureCost& cost);

}  // namespace tracesmith::analysis
