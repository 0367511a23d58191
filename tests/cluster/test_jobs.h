// Per-rank traces for the cluster tests: synthetic work (model/synthetic.h)
// plus what makes merging hard: string tables in a different order per rank
// (the same id names different strings), call stacks with native frames in
// mappings numbered alike in every file, Kineto flow ids reused by every
// rank, stats without a pid, and metadata written between and after the
// events, as a capture streams them.
#pragma once

#include <algorithm>
#include <string>

#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::testing {

struct RankSpec {
  uint32_t pid = 1000;
  int32_t rank = 0;  // -1: none
  std::string host = "node-a";
  uint64_t kernels = 200;
  uint64_t realtime_ns = 1'700'000'000'000'000'000ull;  // the capture's start, CLOCK_REALTIME
  uint64_t clock_offset_ns = 0;                         // added to every capture timestamp
};

inline model::Trace MakeRankTrace(const RankSpec& spec) {
  using namespace model;
  SyntheticOptions o;
  o.kernels = spec.kernels;
  o.pid = spec.pid;
  o.seed = spec.pid * 7 + 1;
  o.kernel_names = 4 + static_cast<uint32_t>(spec.rank < 0 ? 7 : spec.rank % 5);
  o.alloc_every = 20;
  Trace t = MakeSyntheticTrace(o);
  auto shift = [&](uint64_t& v) {
    if (v) v += spec.clock_offset_ns;
  };
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent)
      for (T& e : t.Rows<T>()) {
        if constexpr (requires { e.start_ns; }) {
          shift(e.start_ns);
          shift(e.end_ns);
        } else {
          shift(e.ts_ns);
        }
      }
  });
  for (Process& p : t.Rows<Process>()) {
    p.rank = spec.rank;
    p.hostname_id = t.strings.Intern(spec.host);
  }
  uint64_t first = UINT64_MAX, last = 0;
  for (const KernelEvent& k : t.Rows<KernelEvent>()) {
    first = std::min(first, k.start_ns);
    last = std::max(last, k.end_ns);
  }
  t.Rows<ClockAnchor>().clear();
  t.Rows<ClockAnchor>().push_back(ClockAnchor{.gpu_ns = first,
                                              .realtime_ns = spec.realtime_ns,
                                              .monotonic_ns = 5'000'000'000,
                                              .pid = spec.pid,
                                              .phase = kClockStart});
  // Mapping 1 in every file, a different library per rank.
  t.Rows<Mapping>().push_back(
      Mapping{.mapping_id = 1,
              .start = 0x400000,
              .end = 0x500000,
              .path_id = t.strings.Intern("/opt/rank" + std::to_string(spec.rank) + "/libtrain.so"),
              .pid = spec.pid});
  StackBuilder stacks(&t);
  const uint32_t main_frame = stacks.InternFrame(Frame{.function_id = t.strings.Intern("main"),
                                                       .file_id = t.strings.Intern("train.py"),
                                                       .line = 10,
                                                       .kind = kFramePython});
  int i = 0;
  for (ApiEvent& a : t.Rows<ApiEvent>()) {
    const uint32_t leaf = stacks.InternFrame(
        Frame{.rel_pc = 0x1000u + 16u * (i % 5), .mapping_id = 1, .kind = kFrameNative});
    const uint32_t step =
        stacks.InternFrame(Frame{.function_id = t.strings.Intern("step_" + std::to_string(i % 3)),
                                 .file_id = t.strings.Intern("train.py"),
                                 .line = 20u + i % 3,
                                 .kind = kFramePython});
    const uint32_t frames[] = {leaf, step, main_frame};
    a.stack_id = stacks.InternStack(frames);
    ++i;
  }
  // Kineto-style forward->backward flows between torch ops: ids 1 and 2 in
  // every file.
  const uint32_t op_domain = t.strings.Intern("cpu_op");
  for (uint32_t k = 0; k < 4; ++k)
    t.Rows<NvtxRangeEvent>().push_back(
        NvtxRangeEvent{.start_ns = first + 1000 * k,
                       .end_ns = first + 1000 * k + 500,
                       .pid = spec.pid,
                       .tid = spec.pid + 1,
                       .name_id = t.strings.Intern(k < 2 ? "aten::mm" : "MmBackward0"),
                       .domain_id = op_domain,
                       .flow_out_id = k < 2 ? k + 1 : 0,
                       .flow_in_id = k < 2 ? 0 : k - 1});
  t.Rows<MetadataEntry>().push_back(
      MetadataEntry{.key_id = t.strings.Intern("capture.tool"),
                    .value_id = t.strings.Intern("test rank " + std::to_string(spec.rank)),
                    .pid = spec.pid});
  t.Rows<Stat>().push_back(Stat{.value = 100 + spec.rank,
                                .name_id = t.strings.Intern("capture.test_stat"),
                                .pid = spec.pid,
                                .severity = kStatInfo});
  // A file-level stat (pid 0), as importers write them.
  t.Rows<Stat>().push_back(Stat{.value = 7,
                                .name_id = t.strings.Intern("import.file_level"),
                                .pid = 0,
                                .severity = kStatWarning});
  t.Rows<ClockAnchor>().push_back(ClockAnchor{.gpu_ns = last,
                                              .realtime_ns = spec.realtime_ns + (last - first),
                                              .monotonic_ns = 5'000'000'000 + (last - first),
                                              .pid = spec.pid,
                                              .phase = kClockEnd});
  return t;
}

// Writes `t` as a capture streams it: small chunks, each API call's stack
// rows just before the call, the end clock anchor and stats after the last
// events.
inline Status WriteStreamed(const model::Trace& t, const std::string& path,
                            uint32_t rows_per_chunk = 64) {
  using namespace model;
  format::SbtWriterOptions o;
  o.rows_per_chunk = rows_per_chunk;
  ASSIGN_OR_RETURN(auto w, format::SbtWriter::Open(path, o));
  w->AdoptStrings(t.strings);
  ForEachRecordType([&]<typename T>() {
    if constexpr (!RecordTraits<T>::kIsEvent && !std::is_same_v<T, Frame> &&
                  !std::is_same_v<T, StackNode> && !std::is_same_v<T, Stat>) {
      for (const T& row : t.Rows<T>()) {
        if constexpr (std::is_same_v<T, ClockAnchor>)
          if (row.phase == kClockEnd) continue;
        w->Append(row);
      }
    }
  });
  size_t frames = 0, nodes = 0;
  for (const ApiEvent& a : t.Rows<ApiEvent>()) {
    // The chain of a's stack is in the tables up to its leaf node.
    const size_t need_nodes = std::min<size_t>(a.stack_id, t.Rows<StackNode>().size());
    for (; nodes < need_nodes; ++nodes) {
      const StackNode& n = t.Rows<StackNode>()[nodes];
      for (; frames < n.frame_id; ++frames) w->Append(t.Rows<Frame>()[frames]);
      w->Append(n);
    }
    w->Append(a);
  }
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent && !std::is_same_v<T, ApiEvent>)
      for (const T& row : t.Rows<T>()) w->Append(row);
  });
  RETURN_IF_ERROR(w->Flush());
  for (const ClockAnchor& a : t.Rows<ClockAnchor>())
    if (a.phase == kClockEnd) w->Append(a);
  for (const Stat& s : t.Rows<Stat>()) w->Append(s);
  return w->Close();
}

}  // namespace tracesmith::testing
