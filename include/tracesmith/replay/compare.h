// Output comparison for GPU replay: a replayed memory range against the
// captured "after" image (correctness) or against an earlier replay
// (determinism). CPU-only so it is unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/replay/kernel_profile.h"
#include "tracesmith/replay/launch_memory.h"

namespace tracesmith::replay {

struct CompareResult {
  uint64_t bytes_compared = 0;
  uint64_t bytes_differing = 0;
  uint64_t first_diff_address = 0;  // valid when bytes_differing > 0
  // Over 4-byte-aligned words that differ, read as float32 (the common case
  // for tensors; meaningless for integer data, so reported as "float view").
  uint64_t float_words_differing = 0;
  double max_abs_error = 0, max_rel_error = 0;
  bool identical() const { return bytes_differing == 0; }
  // Accumulates another range's result.
  void Merge(const CompareResult& o);
};

// Compares `actual` with `expected` (same length); `address` is the device
// address of byte 0, used for first_diff_address and float alignment.
CompareResult CompareBytes(std::span<const uint8_t> expected, std::span<const uint8_t> actual,
                           uint64_t address);

// Timing summary of one launch's replays.
struct TimingStats {
  double median_us = 0, min_us = 0, max_us = 0;
};
TimingStats SummarizeTimes(std::vector<double> us);

// The timed runs of one replay: CUDA-event spans, and CUPTI's kernel
// durations for the runs that recorded one.
struct TimedSamples {
  std::vector<double> event_us, cupti_us;
  // CUPTI's times when every run has one (`*from_cupti`), else the events'.
  void Summarize(TimingStats* time, TimingStats* event_time, bool* from_cupti) const;
};

// Idempotence on inputs (`replay --warm`): does a kernel, re-run on the
// memory its last replay left, write the same outputs again? Only then do
// warm runs (back to back, inputs not restored) repeat the work the program
// timed. A nondeterministic kernel's outputs differ between runs anyway, so
// the check counts only differences in bits that never varied between the
// replays from the captured inputs.
//
// `*mask` |= expected XOR actual (grown to the longer length on first use):
// the bits of a range that varied between replays from the same inputs.
void AddVaryingBits(std::span<const uint8_t> expected, std::span<const uint8_t> actual,
                    std::vector<uint8_t>* mask);
// Bytes in which `actual` differs from `expected` in a bit not set in
// `mask` (shorter than the range: the bytes past it have no varying bits;
// bytes past the shorter of expected and actual count as differing).
uint64_t BytesDifferingBeyond(std::span<const uint8_t> expected, std::span<const uint8_t> actual,
                              std::span<const uint8_t> mask);

enum class Idempotence : uint8_t {
  kNotChecked,     // no warm runs (no --warm, or a range replay)
  kIdempotent,     // re-run on its own outputs, it wrote them again bit for bit
  kNotIdempotent,  // it changed bits that replays from the captured inputs never changed
  kUnknown,        // it changed only bits that also varied between replays (or one replay)
};
// "idempotent", "not_idempotent", "unknown", "not_checked" (the JSON names).
const char* IdempotenceName(Idempotence i);

// The evidence: one re-run on the memory the last cold replay left,
// compared with that memory's output ranges.
struct IdempotenceCheck {
  CompareResult rerun_vs_outputs;
  // Of the differing bytes, those that differ in a bit no two replays from
  // the captured inputs disagreed on (AddVaryingBits, BytesDifferingBeyond).
  uint64_t bytes_beyond_nondeterminism = 0;
  // Replays from the captured inputs behind the varying bits: with one,
  // nondeterminism is not measured and a difference cannot be told from it.
  uint32_t replays = 0;
};
Idempotence JudgeIdempotence(const IdempotenceCheck& c);

struct LaunchOutcome;
// Determinism, one replay run at a time: each output range compared with
// the first run's; a run that differs anywhere counts once.
class RunVsFirst {
 public:
  void Add(const CompareResult& range) {
    differs_ |= !range.identical();
    merged_.Merge(range);
  }
  // Adds the run to out->iterations_differing and out->vs_first_replay
  // when any range differed.
  void Close(LaunchOutcome* out) const;

 private:
  bool differs_ = false;
  CompareResult merged_;
};

// What happened to one captured launch on the GPU.
struct LaunchOutcome {
  uint64_t index = 0;
  std::string function;
  std::string attributes;    // launch attributes passed to the replay ("cooperative, priority")
  CompareResult vs_capture;  // first replay vs the captured "after" image
  uint32_t iterations = 0;
  uint32_t iterations_differing = 0;  // replays whose output differs from the first replay
  CompareResult vs_first_replay;      // merged over the differing replays
  TimingStats time;                   // CUPTI kernel durations when available, else events
  bool time_from_cupti = false;
  TimingStats event_time;  // CUDA events around the launch (includes dispatch)
  // `time` and `event_time` are cold: each run starts from restored inputs
  // with the L2 flushed (false: no device memory for the flush buffer, so
  // the L2 holds what the restore wrote). Range replay: each repetition.
  bool l2_flushed = false;
  // --warm (single launches): after the cold replays, `runs` (= iterations)
  // more timed runs without restoring the inputs or flushing the L2, as
  // back-to-back launches in the program run, after one re-run that checks
  // idempotence and one that leaves the L2 as a run leaves it.
  struct WarmTiming {
    uint32_t runs = 0;  // 0: not measured
    TimingStats time;   // CUPTI when `time_from_cupti`, else CUDA events
    bool time_from_cupti = false;
    TimingStats event_time;
    IdempotenceCheck check;
    Idempotence idempotence() const {
      return runs ? JudgeIdempotence(check) : Idempotence::kNotChecked;
    }
  } warm;
  uint64_t recorded_ns = 0;  // the kernel's time inside the original program
  double setup_ms = 0;       // map memory, load the module, first restore of the inputs
  // Range replay: images restored between launches because the program
  // wrote them with work that was not recorded (copies, memsets, kernels).
  uint64_t external_writes = 0;
  bool sequence = false;  // a range replay (several launches), not one launch
  // A graph launch (JSON kind "graph"): its node counts and, with node >= 0,
  // the one kernel node replayed alone (`function` describes it).
  struct GraphInfo {
    bool is_graph = false;
    uint32_t nodes = 0, kernels = 0, memsets = 0, memcpys = 0, empty = 0;
    int64_t node = -1;       // replayed alone; -1: the whole graph as one unit
    uint32_t ancestors = 0;  // nodes run first to rebuild the node's inputs
    // Whole graph: one line per node (GraphNodeLines), for --node K.
    std::vector<std::string> node_lines;
  } graph;
  // Range replay: what the sequence held (`function` words the same).
  struct SequenceCounts {
    uint64_t last_index = 0;  // the range is index..last_index
    uint64_t launches = 0, stream_ops = 0;
    uint64_t copies = 0, memsets = 0, syncs = 0;  // syncs: event record/wait and synchronizations
    uint64_t streams = 0;                         // streams the sequence used
  } sequence_counts;
  // Range replay: ranges left out of the final comparison because a
  // replayed copy or memset wrote them after their last recorded launch.
  uint32_t ranges_not_compared = 0;
  // Relocated replay (relocation.h): ranges mapped away from their captured
  // addresses and pointer words rewritten in parameters and "before" images.
  uint32_t ranges_relocated = 0, ranges_total = 0;
  uint64_t param_words_rewritten = 0, memory_words_rewritten = 0;
  // Set when this launch (or range) could not be replayed: ReplayOnGpu
  // reports the outcome (index, function, sequence) before it returns the
  // error; the other fields are then partial and not reported.
  std::string error;
  // What the launch's snapshots hold and why (launch_memory.h); for a
  // range, empty.
  LaunchMemory memory;
  // --metrics: the launch's hardware counters (kernel_profile.h).
  KernelProfile profile;
  bool nondeterministic() const { return iterations_differing > 0; }
};

// "node 2: kernel _Z11chase_tablePPKfPfi (after 1)", one per node of a
// graph launch record, as the text report lists them.
std::vector<std::string> GraphNodeLines(const format::GraphLaunchRecord& graph);

// The text block of one launch (`tracesmith replay`). Not for an outcome
// with `error` set (the error is printed instead).
std::string FormatLaunchOutcome(const LaunchOutcome& o);

}  // namespace tracesmith::replay
