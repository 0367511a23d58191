// What a capture's trace gets once its file is closed, on the machine whose
// modules made its stacks: native frames named from the modules' symbol
// tables (Symbolize) and, after a --pc-sampling capture, the SASS text of
// the sampled instructions from the cubins it left beside the trace
// (AddSass; the directory is removed once used). nsys does the same at the
// end of a run: the trace then reads with names anywhere.
//
// One function for both ways of capturing: `tracesmith profile` calls it for
// every file of the run when the program ends, and `tracesmith symbolize FILE
// --capture-end` for one, which an in-process capture (session::Session,
// `tracesmith.profile()` in Python) runs when Stop() has closed its file
// (session/finish_process.h). Only a complete, undamaged trace of at most
// kFinishMaxBytes without replay payloads is rewritten (atomically: written
// beside and renamed); anything else stays as the capture left it, with a
// line saying which `tracesmith symbolize` command does it instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/symbolize/compiled_lines.h"

namespace tracesmith::symbolize {

// Larger traces are left to `tracesmith symbolize` (the trace is held in
// memory while it is rewritten).
inline constexpr uint64_t kFinishMaxBytes = 1ull << 30;
// The default time limit, for the names and the SASS together (an in-process
// capture's program waits for them; `tracesmith profile` sets none):
// libtorch_cuda's symbol table takes a few seconds, nvdisasm on a large cubin
// up to a minute. capture::kDefaultSymbolizeTimeLimitNs is the same.
inline constexpr double kDefaultFinishSeconds = 120;

struct FinishOptions {
  // Name the native frames (false: only the SASS text, when there are cubins).
  bool names = true;
  // Seconds for naming and disassembling together; 0: no limit (the SASS
  // then keeps SassOptions' own budget). Frames left when it runs out stay
  // unnamed (a line says so). Reading and writing the trace come on top
  // (bounded by kFinishMaxBytes).
  double time_limit_s = kDefaultFinishSeconds;
  // The caller's option that skips the naming ("--no-symbolize"), named in
  // the line that reports it; "" names none.
  std::string skip_option;
  // torch.compile's graphs (ReadTorchTrace of the run's structured log): the
  // model's lines for the generated frames (compiled_lines.h). Null: none.
  const std::vector<CompiledGraph>* compiled_graphs = nullptr;
};

struct FinishReport {
  // What was done or why not, one line each, "PATH: ..." (without a
  // "tracesmith: " prefix): for the caller to print unless quiet.
  std::vector<std::string> lines;
  bool rewritten = false;         // the trace now holds the names and/or SASS
  uint64_t native_frames = 0;     // native frames without a name before
  uint64_t named_frames = 0;      // named now
  bool names_incomplete = false;  // time limit reached, or the trace was not rewritten
};

// Names and disassembles what `path` needs (nothing when it has neither
// unnamed native frames nor cubins beside it). Never fails: a trace it cannot
// finish is left as it is, and a line says how to finish it later.
FinishReport FinishCapture(const std::string& path, const FinishOptions& options = {});

}  // namespace tracesmith::symbolize
