// StackCollector's constants and private row types, shared by its source files
// (Drain lives apart so that code which never drains, such as a probe
// library, does not link the SBT writer).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "python_frames.h"
#include "tracesmith/stacks/stack_collector.h"

namespace tracesmith::stacks {

// 256 frames bound the on-stack scratch of CaptureStack to ~13 KiB (with the
// walk memo's 2.5 KiB), safe on
// the small stacks of runtime worker threads.
constexpr int kMaxDepthLimit = 256;
// 128K slots x 24 bytes = 3 MiB: room for ~100K distinct stacks at a load
// that keeps probe chains short; a training job has hundreds to thousands.
constexpr int kTableBits = 17;
constexpr uint64_t kTableMask = (uint64_t{1} << kTableBits) - 1;
constexpr int kMaxProbes = 16;
// A Python frame occupies two key words: (kPythonTag | offset, code). The
// tag is a non-canonical x86-64 address, so no native pc can equal it.
constexpr uint64_t kPythonTag = 0xfffe000000000000ull;
// Provisional ids: 256K distinct stacks deferred at most (1 MiB of final
// ids); past that, new stacks are interned on their thread.
constexpr uint32_t kMaxProvisional = uint32_t{1} << 18;
// The deferred records' buffer, reserved ahead by the writer: 512 KiB, ~150
// cold stacks of 400 keys.
constexpr size_t kDeferredWords = size_t{1} << 16;
// And their descriptions' text (Python frames described on a thread without
// the GIL): 256 KiB, ~2,000 frames.
constexpr size_t kDeferredText = size_t{1} << 18;
// Deferred walks (stack_collector_walks.cc): the most a walk copies under Python where its
// end is not known (Python 3.11), and the most a native walk's copy may be (the whole used stack,
// or the walk is finished on its thread).
constexpr size_t kWalkCopyMixedBytes = size_t{64} << 10;
constexpr size_t kWalkCopyNativeBytes = size_t{128} << 10;

// The keys of a mixed stack: each native eval-loop frame of `pcs` replaced by the Python frames
// of its activation (those up to one that ends a segment), Python frames left over at the outer
// end; at most `max_depth` frames, a Python frame two keys (kPythonTag | offset, code). With
// `py_at`, py_at[j] is where Python frame j's first key went (-1: left out, past max_depth).
// The number of keys.
inline int MergeKeys(const PythonFrames& python, const uint64_t* pcs, int n_native,
                     const PyFrameRef* py, int n_py, int max_depth, uint64_t* merged,
                     int* py_at = nullptr) {
  int n = 0, frames = 0, pi = 0;
  auto emit_python = [&](bool whole_rest) {
    while (pi < n_py && frames < max_depth) {
      if (py_at) py_at[pi] = n;
      merged[n++] = kPythonTag | uint32_t(py[pi].offset);
      merged[n++] = py[pi].code;
      ++frames;
      if (py[pi++].ends_segment && !whole_rest) break;
    }
  };
  const bool merge = python.knows_eval_frame();
  for (int i = 0; i < n_native && frames < max_depth; ++i) {
    if (merge && pi < n_py && python.IsEvalFrame(pcs[i])) {
      emit_python(false);
    } else {
      merged[n++] = pcs[i];
      ++frames;
    }
  }
  emit_python(true);
  if (py_at)
    for (int j = pi; j < n_py; ++j) py_at[j] = -1;
  return n;
}

// A cached stack: its 128-bit key hash (two 64-bit halves) and id. hash is
// stored last, with release, and read first, with acquire.
struct StackCollector::Slot {
  std::atomic<uint64_t> hash{0};
  std::atomic<uint64_t> hash2{0};
  std::atomic<uint32_t> id{0};
};

struct StackCollector::PendingFrame {
  model::Frame row;
  std::string function, file;  // Python frames
};

struct StackCollector::PendingMapping {
  model::Mapping row;
  std::string path, build_id;
};

}  // namespace tracesmith::stacks
