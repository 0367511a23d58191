// Decoding of XRay log files (compiler-rt's runtime, basic and FDR mode) into
// per-thread runs of function records with absolute TSC values. Turning those
// into ranges is xray_importer.cc's job.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::importer::xray {

// XRayEntryType values as both log formats store them.
enum CallKind : uint8_t { kEnter = 0, kExit = 1, kTailExit = 2, kEnterArgs = 3 };

struct Call {
  uint64_t tsc;
  int32_t func_id;
  uint8_t kind;  // CallKind
};

// Consecutive records of one thread: one FDR buffer, or one run of basic-mode
// records of the same thread. A thread's blocks are in time order once sorted
// by their first TSC (FDR writes its buffer queue in ring order).
struct Block {
  uint32_t pid = 0, tid = 0;
  std::vector<Call> calls;
};

struct Log {
  uint16_t version = 0;
  uint16_t type = 0;  // 0 basic ("naive"), 1 FDR
  bool constant_tsc = false, nonstop_tsc = false;
  uint64_t cycle_frequency = 0;  // TSC ticks per second; 0 when the runtime did not know
  std::vector<Block> blocks;
  uint64_t skipped = 0;  // custom and typed events, call arguments
  std::string damage;    // where and why decoding stopped early; empty when the whole file was read
};

inline constexpr size_t kFileHeaderBytes = 32;

// Header errors are returned; damage after the header stops decoding and is
// reported in Log::damage with its byte offset, keeping what came before.
StatusOr<Log> ParseLog(std::string_view data);

}  // namespace tracesmith::importer::xray
