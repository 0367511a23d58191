// GPU instruction samples (CUPTI PC sampling, docs/pc-sampling.md): where the
// time inside each kernel goes, by stall reason, source line and instruction.
//
// PcSampleEvent rows are aggregated as they arrive, by (pid, function, cubin,
// pc_offset, stall reason): memory grows with the sampled instructions, never
// with the rows (one drain window of ~10 ms gives a row per instruction and
// reason). CompactTrace feeds its PcSamples while a trace streams in
// (CompactTrace::pc_samples()); SummarizePcSamples joins them with the kernel
// ops of the analysed window (GPU time, by pid and the kernel's name) and with
// the PcLine metadata (source file and line of each sampled instruction).
//
// Samples are counted for the whole trace, whatever the window: a drain
// window aggregates many launches and cannot be cut in time.
//
// The launching code. Continuous mode gives no correlation id, so samples are
// joined to launches through time: each drain window's samples of a function
// go to that function's launches running in the window (stretched back by
// kSampleLatencyNs, the time a sample may wait in CUPTI before a drain takes
// it), shared by how long each ran inside it, and so to each launch's host
// stack (CallSiteNamer's name). A window without such a launch (outside the
// analysed window, or a clock that disagrees) is shared by the function's GPU
// time per call site; FunctionSamples::by_window says how much went which way.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

class CompactTrace;    // compact_trace.h
struct CallSiteRules;  // call_site.h

// Plain words for a stall reason (CUPTI's name or its short name, e.g.
// "long_scoreboard": "waiting for a global/local memory (L1TEX) result"); the
// short name when the reason is not known. `_not_issued` variants read as
// their reason's words with ", nothing issued".
std::string StallDescription(std::string_view cupti_name);

// The rows of a trace's samples, aggregated (no row is kept).
class PcSamples {
 public:
  struct Key {
    uint64_t cubin_crc = 0;
    uint32_t pid = 0, function_id = 0, pc_offset = 0, stall_id = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };

  // A drain window's samples of one function (all reasons).
  struct Window {
    uint64_t start_ns = 0, end_ns = 0;
    uint32_t pid = 0, function_id = 0;
    uint64_t samples = 0;
  };

  void AddSamples(const std::vector<model::PcSampleEvent>& rows);
  // Kernel rows: their mangled name -> the name their ops carry (the
  // demangled one), to find a sampled function's GPU time.
  void AddKernels(const std::vector<model::KernelEvent>& rows);

  bool empty() const { return rows_ == 0; }
  uint64_t rows() const { return rows_; }
  uint64_t kernel_rows() const { return kernel_rows_; }
  const std::unordered_map<Key, uint64_t, KeyHash>& samples() const { return samples_; }
  const std::vector<Window>& windows() const { return windows_; }
  std::vector<Window>& mutable_windows() { return windows_; }  // clock alignment
  // The name id the ops of kernel (pid, mangled name id) carry: its demangled
  // name when its rows had one, else the mangled id itself.
  uint32_t OpNameOf(uint32_t pid, uint32_t mangled_id) const;

 private:
  std::unordered_map<Key, uint64_t, KeyHash> samples_;
  std::vector<Window> windows_;                       // in arrival order
  std::unordered_map<uint64_t, uint32_t> demangled_;  // pid << 32 | mangled -> demangled
  std::array<uint64_t, 256> recent_{};                // kernel names recorded lately (a cache)
  uint64_t rows_ = 0, kernel_rows_ = 0;
};

struct StallShare {
  std::string reason;       // CUPTI's name
  uint64_t samples = 0;     // counted samples
  uint64_t not_issued = 0;  // of them, those with nothing issued (the _not_issued reason)
  double share = 0;         // of the function's samples, %
};

struct LineShare {
  std::string file;  // empty: no line information
  uint32_t line = 0;
  uint64_t samples = 0;
  double share = 0;  // of the function's samples, %
};

struct InstructionShare {
  uint32_t pc_offset = 0;
  std::string file;  // empty: no line information
  uint32_t line = 0;
  uint64_t samples = 0;
  double share = 0;            // of the function's samples, %
  std::string top_stall;       // its most sampled reason (CUPTI's name)
  double top_stall_share = 0;  // of the instruction's samples, %
  std::string sass;            // its SASS text, when disassembled (PcSass rows)
};

// The code that launched a sampled function, with the samples joined to it.
struct SiteShare {
  std::string site;                      // CallSiteNamer's name of the launches' host stack
  uint64_t samples = 0;                  // of the function's counted samples
  double share = 0;                      // of the function's samples, %
  uint64_t launches = 0, kernel_ns = 0;  // its launches of the function in the window
};

// How long a sample may wait in CUPTI before a drain takes it (its worker
// wakes every 1 ms; docs/pc-sampling.md): a window's samples are joined to the
// launches that ran in [start - this, end].
inline constexpr uint64_t kSampleLatencyNs = 2'000'000;

// The span of a drain window that launches are joined to: [start -
// kSampleLatencyNs, end), at least 1 ns.
struct WindowSpan {
  uint64_t from = 0, to = 0;
};
inline WindowSpan SpanOf(const PcSamples::Window& w) {
  const uint64_t from = w.start_ns > kSampleLatencyNs ? w.start_ns - kSampleLatencyNs : 0;
  return {from, std::max(w.end_ns, from + 1)};
}
// How long the launch [start, end) ran inside `span` (a zero-length launch,
// clock granularity, counts as 1 ns): its weight in the window's samples.
inline uint64_t OverlapNs(const WindowSpan& span, uint64_t start, uint64_t end) {
  const uint64_t s = std::max(start, span.from);
  const uint64_t e = std::min(std::max(end, start + 1), span.to);
  return e > s ? e - s : 0;
}

// One sampled function of one process.
struct FunctionSamples {
  std::string name;      // as the kernel table names it (demangled when captured)
  std::string function;  // as sampled (mangled)
  uint32_t pid = 0;
  // String ids in the trace: the sampled (mangled) name, and the name its
  // kernel ops carry (PcSamples::OpNameOf).
  uint32_t function_id = 0, name_id = 0;
  uint64_t samples = 0;
  double share = 0;                            // of all samples, %
  uint64_t kernels = 0, kernel_ns = 0;         // its kernel ops in the window
  double gpu_share = 0;                        // of kernel time in the window, %
  std::vector<StallShare> stalls;              // all, most samples first
  std::vector<LineShare> lines;                // the hottest (kMaxRows), most samples first
  std::vector<InstructionShare> instructions;  // the hottest (kMaxRows)
  // Its launching code, most samples first (empty when the trace has no stacks).
  std::vector<SiteShare> sites;
  uint64_t by_window = 0;  // samples joined to launches by time (the rest by GPU time)
  static constexpr size_t kMaxRows = 10;
};

struct PcSampleReport {
  uint64_t samples = 0, rows = 0;
  // Some kernels lie outside the analysed window: GPU time is the window's,
  // samples the whole trace's.
  bool window_narrower = false;
  std::vector<FunctionSamples> functions;  // by GPU time, then samples
  bool empty() const { return rows == 0; }
};

// What the trace says of its sampled instructions (PcLine and PcSass rows),
// keyed as PcSamples::Key with stall_id 0 (InstructionKey).
struct InstructionIndex {
  struct Line {
    uint32_t file_id = 0, line = 0;
  };
  std::unordered_map<PcSamples::Key, Line, PcSamples::KeyHash> lines;
  std::unordered_map<PcSamples::Key, uint32_t, PcSamples::KeyHash> sass;  // text id
  const Line* LineOf(const PcSamples::Key& k) const;
  uint32_t SassOf(const PcSamples::Key& k) const;  // 0: none
};
InstructionIndex IndexInstructions(const model::Trace& meta);
InstructionIndex IndexInstructions(const CompactTrace& trace);  // of trace.meta()
inline PcSamples::Key InstructionKey(uint64_t cubin_crc, uint32_t pid, uint32_t function_id,
                                     uint32_t pc_offset) {
  return PcSamples::Key{cubin_crc, pid, function_id, pc_offset, 0};
}

// The stall reasons of `counts` (samples by stall reason string id, the
// uncounted `_not_issued` ones among them): each counted reason with its share
// of `total`, its `_not_issued` count beside it; most samples first.
std::vector<StallShare> StallShares(const std::map<uint32_t, uint64_t>& counts,
                                    const model::Trace& meta, uint64_t total);

// Each sampled function of `samples` (names and lines from `meta`, the
// trace's strings and PcLine / PcSass rows): its counted samples and share of
// all, stall reasons, hottest `max_lines` lines and kMaxRows instructions; by
// (pid, function id). No GPU time nor launching code: those need the kernel
// ops (SummarizePcSamples).
std::vector<FunctionSamples> SampledFunctions(const PcSamples& samples, const model::Trace& meta,
                                              size_t max_lines = FunctionSamples::kMaxRows);

// The report of `trace`'s samples (empty without samples). `kernel_ns`: the
// window's kernel time, the denominator of GPU-time shares; `rules` name the
// launching code as the kernel tables do.
PcSampleReport SummarizePcSamples(const CompactTrace& trace, uint64_t kernel_ns,
                                  const CallSiteRules& rules);

// One launch of a sampled function, for the join (pc_sample_sites.cc).
struct SampledLaunch {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t site = 0;  // index into the sites
};

// Shares `samples` (a function's counted samples) among `nsites` call sites:
// each window's part (window samples / all its windows' samples) goes to the
// launches overlapping it, by overlap; what no launch overlaps goes by each
// site's GPU time. `launches` sorted by start. Returns samples per site (they
// sum to `samples`) and sets *by_window.
std::vector<uint64_t> JoinSamplesToSites(const std::vector<PcSamples::Window>& windows,
                                         const std::vector<SampledLaunch>& launches, size_t nsites,
                                         uint64_t samples, uint64_t* by_window);

// "42.2 M" (samples, rows): 4 digits, then k, M, G with one decimal.
std::string SampleCount(uint64_t n);

// "kernels.cu:42": the file's name without its directories (at most 48
// characters, safe for a terminal) and the line; for samples without line
// information, "(no line info: compile with -lineinfo)".
std::string SourceLineText(std::string_view file, uint32_t line);

}  // namespace tracesmith::analysis
