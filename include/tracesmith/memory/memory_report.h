// `tracesmith memory`: where the GPU memory went. Built from a trace file by
// streaming its memory events twice through the live-memory model
// (memory_model.h) in bounded memory: peak per process and device with what
// was live then (by owner, by call site, the largest allocations), the run
// summarised (growth, steady state), allocations still live at the end (leak
// suspects: call sites whose live allocations pile up through the run),
// churn (call sites that allocate and free over and over), and what was live
// at a chosen instant.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/memory/memory_model.h"

namespace tracesmith::analysis {

struct MemoryReportOptions {
  size_t top = 10;   // rows per table
  size_t bins = 60;  // points of the live-bytes summary per process and device
  std::string at;    // "2.5s": what was live then (relative to the trace start)
  // Place the peaks in the steps of their process (steps.h). Steps from NVTX
  // ranges cost little; steps from the repeating kernel sequence hold the
  // process's kernels while they are found, as analyze does (24 bytes each).
  bool steps = true;
};

struct OwnerBytes {
  std::string owner, library;
  uint64_t bytes = 0, count = 0;
};
struct SiteBytes {
  std::string site, owner;
  uint64_t bytes = 0, count = 0;
  uint64_t first_ns = 0, last_ns = 0;  // allocation times (relative), for leak rows
  bool suspect = false;                // leak rows: piles up through the run
};
struct AllocationRow {
  uint64_t address = 0, bytes = 0, alloc_ns = 0;  // alloc_ns relative to the trace start
  std::string owner, site;
  uint8_t memory_kind = 0;
};

// What was live on one process/device/space at an instant.
struct MemorySnapshot {
  uint64_t ts_ns = 0;  // relative to the trace start
  uint64_t live_bytes = 0, live_count = 0;
  std::vector<OwnerBytes> by_owner;  // largest first
  std::vector<SiteBytes> by_site;    // largest first (top N)
  std::vector<AllocationRow> top;    // largest first (top N)
};

// Where an instant of the run (a peak) falls among the steps of its process
// as `analyze` finds them (steps.h), and in which phase of a training step
// when the allocation's call stack or the NVTX ranges open then say so.
struct StepPlace {
  enum Where : uint8_t { kNoSteps, kInStep, kBefore, kBetween, kAfter };
  Where where = kNoSteps;
  uint32_t step = 0;     // kInStep: the step (numbered from 1); kBetween: the one before
  bool warmup = false;   // kInStep: a step of the warm-up (WarmupSteps)
  std::string phase;     // "forward", "backward", "optimizer"; empty: not known
  std::string evidence;  // what says the phase ("allocated on the autograd engine's thread")
  // In words: "in step 3's backward", "in step 1 (the warm-up)", "before step 1",
  // "between steps 3 and 4", "after step 10, the last", "in a backward pass" (no
  // steps); empty when nothing is known.
  std::string text;
};

// The steps of a process, as placed for its allocations (host time).
struct MemorySteps {
  std::string method;  // StepReport::method; empty: no steps found
  uint32_t count = 0, warmup = 0;
  // Where the steps' bounds come from on the host's clock, on which
  // allocations happen: "NVTX ranges" (the host's own), "launch calls" (a
  // kernel-sequence step begins when the host launched its first kernel),
  // "GPU times" (no launch calls in the trace: the kernels' own times).
  std::string bounds;
};

struct OwnerPeak {
  std::string owner, library;
  uint64_t peak_bytes = 0, peak_ns = 0, end_bytes = 0, first_ns = 0;
  // The latest allocation among its blocks still live at the end: held from
  // then on (0 when nothing is live at the end).
  uint64_t held_since_ns = 0;
  StepPlace peak_place;  // where its peak falls among the process's steps
  // Its max live bytes per bin, on the key's bins (MemoryKeyReport::bins),
  // the bytes carried into a bin counted for it (the report's memory chart;
  // not in `memory --json`).
  std::vector<uint64_t> bins;
};

struct MemoryKeyReport {
  MemoryKey key;
  std::string process, device;  // "python (pid 123)", "GPU 0: NVIDIA H100"
  MemoryTotals totals;          // at the end
  uint64_t peak_bytes = 0;
  MemorySnapshot at_peak;
  // The innermost NVTX range of the process open at the peak (e.g. a step or
  // phase the program annotated), empty when none.
  std::string peak_nvtx_range;
  StepPlace peak_place;  // where the peak falls among the process's steps, and in which phase
  MemorySteps steps;     // the process's steps
  std::vector<OwnerPeak> owners;  // by peak, largest first
  // Max live bytes per bin of [0, duration], the bytes carried into a bin
  // counted for it (also when its first event is a free), as the owners' bins.
  std::vector<uint64_t> bins;
  std::string summary;  // growth and steady state in words
  uint64_t end_bytes = 0, end_count = 0;
  std::vector<SiteBytes> live_at_end;  // by call site, largest first
  std::optional<MemorySnapshot> at;
  std::optional<uint64_t> used_at_start;  // cuMemGetInfo used bytes at capture start (device)
  // torch.profiler's own totals of the caching allocator on this device, their
  // maxima (an imported trace's [memory] events: "Total Allocated", "Total
  // Reserved"; model::kTorchAllocatedCounter); absent otherwise.
  std::optional<uint64_t> torch_allocated_peak, torch_reserved_peak;
  // Allocated while the process was capturing a CUDA graph (between a stream's
  // Begin/EndCapture calls): the memory of graph pools (PyTorch's private
  // pools, cudaGraph memory nodes' backing), at the peak and at the end.
  uint64_t graph_pool_peak_bytes = 0, graph_pool_end_bytes = 0, graph_pool_end_count = 0;
};

struct ChurnRow {
  std::string site, owner;
  uint64_t allocs = 0, frees = 0, bytes = 0;
  double per_second = 0;
  uint64_t mean_lifetime_ns = 0;
};

// Whether the allocations carry the host call stacks that owners and call
// sites are named from (static memory of loaded modules, allocated without a
// call, is left out: it never has one).
struct AllocationStacks {
  uint64_t allocations = 0, with_stack = 0;
  uint64_t without_stack_bytes = 0;  // summed over the allocations without one
  // Plain words when some or every allocation has no stack, and why as far as
  // the trace tells (its capture metadata); empty when every one has a stack.
  std::string note;
  bool none() const { return allocations > 0 && with_stack == 0; }
};

struct MemoryReport {
  std::string source;
  uint64_t start_ns = 0, duration_ns = 0;  // trace time range (start in the capture clock)
  uint64_t events = 0, out_of_order = 0;
  uint64_t graph_captures = 0;        // stream captures (Begin/EndCapture pairs) seen
  std::vector<MemoryKeyReport> keys;  // by process, device, space
  std::vector<ChurnRow> churn;        // most allocations first
  AllocationStacks stacks;
  std::vector<std::string> findings;  // plain words
};

Status BuildMemoryReport(const std::string& path, const MemoryReportOptions& options,
                         MemoryReport* report, format::ReadReport* damage = nullptr);
// The same from any source (a run merged on the fly: cluster/run_source.h);
// MemoryReport::source is source.name() (empty for a run: the caller names it).
Status BuildMemoryReport(format::TraceSource& source, const MemoryReportOptions& options,
                         MemoryReport* report, format::ReadReport* damage = nullptr);
void WriteMemoryText(const MemoryReport& report, const MemoryReportOptions& options,
                     std::ostream& out);
void WriteMemoryJson(const MemoryReport& report, std::ostream& out);

}  // namespace tracesmith::analysis
