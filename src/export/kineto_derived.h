// What torch.profiler's Kineto trace has and a capture lacks, derived from
// what the capture holds, for the Chrome/Kineto JSON export (json_exporter.cc;
// docs/export.md, "Chrome / Kineto JSON"):
// - "External id" of launch calls and their GPU ops when no framework op set
//   one: one id per launch, shared by the call and its GPU ops;
// - "ProfilerStep#N" user_annotation ranges over the steps the trace shows
//   (analysis/steps.h), when it has no ProfilerStep ranges of its own; for
//   steps of the repeating kernel sequence also their gpu_user_annotation
//   copies: per stream, the kernels launched on the steps' thread during the
//   step, from the first one's start to the last one's end;
// - "gpu_user_annotation" ranges: each captured NVTX range on each GPU stream
//   that ran work launched inside it, from the first such op's start to the
//   last one's end.
// The sink feeds it every event it writes (in time order), then writes the
// slices it returns after the trace's own events.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "event_sink.h"
#include "id_set.h"
#include "tracesmith/analysis/steps.h"

namespace tracesmith::exporter {

class KinetoDerived {
 public:
  // Derived external ids start above every id the trace holds
  // (ExportContext::max_external_id): launches at base + (pid index << 32 |
  // correlation id), NVTX ranges at base + 2^47 + their number.
  void Begin(const ExportContext& ctx);

  // The "External id" of a launch call or GPU op: the framework's when the
  // call had one, else the derived id of its launch when the call and a GPU
  // op of its correlation id were both recorded, else 0.
  uint64_t ExternalId(uint32_t pid, uint32_t corr, uint64_t recorded) const {
    if (recorded != 0 || corr == 0 || !ctx_->Linked(pid, corr)) return recorded;
    return base_ + ctx_->FlowId(pid, corr);
  }

  // A captured NVTX range (not one of an imported Kineto trace): its
  // External id (shared with its gpu_user_annotation slices). Any range's
  // name also says whether the trace has steps of its own.
  uint64_t OnNvtxRange(const model::NvtxRangeEvent& r, std::string_view name, bool captured);
  // The program's own ranges (tracesmith.range, app.h): step ranges as NVTX
  // ones (analysis reads them as such), no GPU annotations.
  void OnAppRange(const model::AppEvent& e, std::string_view name);
  void OnApiCall(const model::ApiEvent& a);
  void OnGpuOp(uint32_t pid, uint32_t corr, uint32_t device, uint32_t stream, uint64_t start,
               uint64_t end);
  void OnKernel(const model::KernelEvent& k);
  // A launch inside a host annotation rebuilt from stacks (torch.optim's
  // step, python_stacks.h) with that annotation's External id: its GPU ops
  // make the annotation's gpu_user_annotation on each stream.
  void OnAnnotatedLaunch(uint32_t pid, uint32_t corr, uint64_t external_id, std::string_view name);

  struct Slice {
    const char* cat;
    std::string name;
    uint64_t pid, tid, start_ns, end_ns;
    uint64_t external_id;  // 0: no args
  };
  // Every derived slice: steps first, then GPU annotations by range, then
  // those of the annotations rebuilt from stacks.
  std::vector<Slice> Finish(const model::Trace& meta);

 private:
  struct Launch {
    uint32_t tid;
    uint64_t start_ns, end_ns;
  };
  // A kernel with its stream and its launch call's thread and times (tid
  // UINT32_MAX: the call was not seen before it; a call of 4.3 s or more
  // counts as 4.3 s). 40 bytes.
  struct StepKernel {
    uint64_t start_ns, end_ns;
    uint32_t name_id, tid;
    uint64_t launch_start_ns;
    uint32_t launch_ns, stream;
    uint64_t launch_end_ns() const { return launch_start_ns + launch_ns; }
  };
  static_assert(sizeof(StepKernel) == 40);
  struct Range {
    uint64_t start_ns, end_ns, external_id;
    uint32_t pid, tid, name_id;
    uint32_t parent;  // the enclosing range's index + 1; 0: none
  };
  struct Open {
    uint64_t end_ns;
    uint32_t range;
  };
  static uint64_t Key(uint32_t pid, uint32_t id) { return (uint64_t{pid} << 32) | id; }
  void StepSlices(const model::Trace& meta, std::vector<Slice>* out);

  const ExportContext* ctx_ = nullptr;
  uint64_t base_ = 0;
  bool has_profiler_steps_ = false;  // or is an imported Kineto trace: no steps added
  std::vector<Range> ranges_;        // captured NVTX ranges
  std::vector<Range> step_ranges_;   // "step N" ranges
  std::unordered_map<uint64_t, std::vector<Open>> open_;  // host lane -> open ranges
  // [pid index]: correlation id -> the innermost range open at its launch, + 1
  std::vector<IdMap> innermost_;
  bool any_inside_ = false;
  // (pid, corr) -> a linked call whose GPU op has not come yet (only those:
  // its first op takes it along)
  std::unordered_map<uint64_t, Launch> launches_;
  // Kernels per (pid, device): the busiest GPU's repeat once per step.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<StepKernel>> kernels_;
  std::pair<uint32_t, uint32_t> last_gpu_{UINT32_MAX, UINT32_MAX};
  std::vector<StepKernel>* last_kernels_ = nullptr;
  // (range, device, stream) -> [first op start, last op end]
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> gpu_spans_;
  // Host annotations rebuilt from stacks: (name, External id); the index of
  // each by External id; (pid, corr) of their launches -> index; and
  // (index, device, stream) -> [first op start, last op end].
  std::vector<std::pair<std::string, uint64_t>> annotations_;
  std::unordered_map<uint64_t, uint32_t> annotation_index_;
  // [pid index]: correlation id -> that index + 1 (8 bytes per id while the ids are dense,
  // as innermost_: a hash map took ~50 per launch inside an annotation, for the whole export)
  std::vector<IdMap> annotated_launches_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>>
      annotation_spans_;
};

}  // namespace tracesmith::exporter
