// One-launch reproducers: `tracesmith replay CAP --extract N -o repro.sbt`
// writes a replay capture holding only what launch N needs (the capture
// info, its module, the launch record with its time in the program, and its
// memory before and after, with their origins) — small enough to attach to a
// bug report for a compiler or driver team, and replayed like any capture
// (`tracesmith replay repro.sbt`) on a machine of the same architecture.
// CPU only.
#pragma once

#include <cstdint>
#include <string>

#include "tracesmith/base/status.h"
#include "tracesmith/format/replay_payload.h"

namespace tracesmith::replay {

struct ExtractOptions {
  uint64_t launch = 0;     // the launch index (as `replay` prints it)
  bool overwrite = false;  // replace an existing output file
};

// What the reproducer holds, for the summary the CLI prints.
struct ExtractSummary {
  uint64_t launch = 0;
  std::string function;
  uint64_t file_bytes = 0;  // the reproducer's size on disk
  uint64_t module_bytes = 0;
  format::ImageKind module_kind = format::ImageKind::kUnknown;
  uint32_t ranges = 0;        // memory ranges (each with a before and an after image)
  uint64_t memory_bytes = 0;  // bytes of one image set (before)
  uint32_t reached = 0;       // ranges reached through pointers in memory
  uint64_t param_bytes = 0;
  uint64_t recorded_ns = 0;  // the kernel's time in the program (0: unknown)
  format::CaptureInfo info;
  bool has_info = false;
};

// Reads the capture at `in` (its damaged parts as `replay` would refuse
// them), and writes launch `options.launch` alone to `out` atomically (an
// existing file is replaced only with `overwrite`; `out` must not be `in`).
// The launch's time in the program is taken from the capture's trace (its
// kernel row) into the launch record, since the reproducer has no trace.
StatusOr<ExtractSummary> ExtractLaunch(const std::string& in, const std::string& out,
                                       const ExtractOptions& options);

// "wrote repro.sbt (2.31 MiB): launch 4 gather_ptrs: module 312.00 KiB (cubin), ..."
std::string FormatExtractSummary(const std::string& out, const ExtractSummary& s);

}  // namespace tracesmith::replay
