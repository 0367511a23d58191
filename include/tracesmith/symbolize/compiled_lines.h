// The model's lines behind torch.compile's generated code (issue #41 item 1),
// added to a trace once the program has ended, on its machine.
//
// Where they are (PyTorch 2.11, H200, 2026-11-30; gpu/probes/
// inductor_lines.py): with INDUCTOR_PROVENANCE=1, Inductor writes
//   # [Provenance debug handles] triton_poi_fused_gelu_view_3:8
// above each kernel call of its output code, and with TORCH_TRACE=DIR its
// structured log (one file per process in DIR) holds, per compiled graph,
// an "inductor_output_code" entry naming the generated file (its text as the
// payload) and an artifact "inductor_provenance_tracking_kernel_stack_traces"
// whose payload maps "kernel:handle" to the Python stack traces of the model
// code the kernel came from ("  File \"model.py\", line 17, in forward\n"),
// and "inductor_provenance_tracking_node_mappings" with the graph's nodes
// behind each kernel. Dynamo records lines of the user's code only: a model
// made of torch.nn's own modules has no stack traces, only node names
// ("linear", "gelu"), which are kept instead. On a warm Inductor cache
// (fx_graph_cache_hit) the stack traces were empty too (H200, 2026-11-30,
// a torch.nn Transformer; whether for the user's code as well is unknown).
// `tracesmith profile` sets both for the program (unless set already) and
// removes the log it made once the traces have their lines.
//
// Generated line -> handle (the comment above its call) -> stack traces of
// that graph -> model frames; stored as model/compiled_lines.h entries for
// the generated lines the trace's stacks hold.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/model/compiled_lines.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::symbolize {

// One compiled graph as the structured log gives it.
struct CompiledGraph {
  std::string file;  // the generated module's path
  std::string code;  // its text (the log's payload)
  // "kernel:handle" -> stack trace texts.
  std::map<std::string, std::vector<std::string>> stacks;
  // "kernel:handle" -> the graph's nodes before autograd (Dynamo's names),
  // from the artifact "inductor_provenance_tracking_node_mappings"
  // (cppCodeToPost, then postToPre).
  std::map<std::string, std::vector<std::string>> nodes;
};

// The graphs of every log file in `dir`, each output code paired with the
// stack-trace table whose handles its comments name most. A line or file it
// cannot read is skipped; an error only when `dir` cannot be listed.
StatusOr<std::vector<CompiledGraph>> ReadTorchTrace(const std::string& dir);
// The same for one log file's text.
std::vector<CompiledGraph> ParseTorchTraceLog(std::string_view text);

// Python stack-trace text -> frames, outermost first (the "File" lines).
model::ModelStack ParseStackTrace(std::string_view text);

// A generated file's kernel-call lines -> the "kernel:handle" of the
// provenance comment above each (the comment, the lines down to the call and
// the call's continuation lines).
std::map<uint32_t, std::string> HandleLines(std::string_view code);

struct CompiledLinesStats {
  uint64_t generated_lines = 0;  // lines of generated files the stacks hold
  uint64_t with_model = 0;       // ... given the model's lines
  uint64_t with_nodes = 0;       // ... given only the graph's node names
};

// Adds the entries for the generated frames of `trace` whose files the
// graphs name (the file read from disk when it is there, else the log's
// text). Entries already in the trace are kept as they are.
CompiledLinesStats AddCompiledLines(model::Trace* trace, const std::vector<CompiledGraph>& graphs);

}  // namespace tracesmith::symbolize
