// StackCollector's constants and private row types, shared by its source files
// (Drain lives apart so that code which never drains, such as a probe
// library, does not link the SBT writer).
#pragma once

#include <atomic>
#include <string>
#include <vector>

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
