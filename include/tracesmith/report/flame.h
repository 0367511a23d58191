// Flame-graph data: where GPU time comes from in the host code. Each GPU op
// (kernel, memcpy, memset) is charged to the host call stack of the API call
// that issued it (joined by correlation id, timeline/compact_trace.h), with
// the op's name as the leaf: `root;...;caller;kernel`. Weighted by the op's
// GPU time (default) or by one per launch.
//
// The stacks are the trace's own (model::StackFrames): Python and native
// frames are already merged into one stack at capture, leaf first, as
// `view --stacks` prints them. Frames are labelled by function rather than
// by address (FlameFrameLabel), so calls of one function from different
// return addresses merge into one box, and identical label paths of
// different stack ids merge into one line. The thread's start-up frames at
// the root (libc's and libstdc++'s, symbolized or not) are one box naming
// the thread (FindThreadRoot): "thread: main;Py_BytesMain;...",
// "thread: autograd;torch::autograd::python::PythonEngine::thread_init(...);...".
//
// GPU frames: in a trace with GPU instruction samples (profile --pc-sampling),
// a sampled kernel's GPU time is split further by where its samples landed:
// `...;kernel;file.cu:66;+0x00b0 IMAD R5, R5, 0x19660d, RZ` (source line, or
// "(no line info)"; the instruction's offset and SASS text when the trace has
// it), its 16 hottest instructions and, per line, "(N other instructions)"
// (analysis::InstructionProfiles; the same split under every stack that
// launched the kernel). Only with the GPU-time weight.
//
// The folded text (WriteFolded) is what flamegraph.pl, inferno and
// speedscope read; `tracesmith export -f folded` and the HTML report's flame
// graph are both built from FoldStacks.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::report {

enum class FlameWeight {
  kGpuTime,   // nanoseconds of GPU time of the ops launched
  kLaunches,  // one per op
};
// "gpu-time" | "launches"; InvalidArgument naming the choices otherwise.
StatusOr<FlameWeight> ParseFlameWeight(std::string_view text);
const char* FlameWeightName(FlameWeight weight);

// The stem of an op without a host stack (no API call joined, or a call
// recorded without a stack).
inline constexpr std::string_view kNoStack = "(no stack)";

// One line of folded stacks: frames root first, then the op's name,
// separated by ';' (a ';' or newline inside a name becomes '_').
struct FoldedStack {
  std::string frames;
  uint64_t weight = 0;
};

struct FoldedStacks {
  std::vector<FoldedStack> lines;  // sorted by `frames`, each text once
  FlameWeight weight = FlameWeight::kGpuTime;
  uint64_t total = 0;              // sum of the weights
  uint64_t ops = 0;                // GPU ops counted
  uint64_t ops_without_stack = 0;  // of which under kNoStack
};

// The flame-graph label of frame `frame_id` (1-based) of `meta`: the function
// name, or "module+0xOFFSET" for a native frame without a symbol (the module's
// file name, "?" when the trace has no mapping for it); " (file:line)"
// appended when known. Python frames read "fn (file.py:line)".
std::string FlameFrameLabel(const model::Trace& meta, uint32_t frame_id);

// The thread's start-up at the root of a stack, replaced by one box naming
// the thread. A full native stack ends, at its root, in the C runtime's
// thread start (`_start`, `__libc_start_main`, `__libc_start_call_main` on
// the main thread; `clone3`, `start_thread`, libstdc++'s
// `execute_native_thread_routine` on the others), often without symbols
// ("libc.so.6+0x129ecc"). Its start-up frames are the root's run of native
// frames that are in the C/C++ runtime's modules (libc, libpthread, ld-linux,
// ld-musl, libstdc++, libc++, libc++abi, libgcc_s) or are named as one of
// those start routines (a static runtime's, in the program), plus the
// program's own unsymbolized `_start` as the outermost frame (a frame of the
// executable, a module whose file name has no ".so", right above a runtime
// frame). The first frame after them is the thread's entry (`main`,
// `Py_BytesMain`, `PythonEngine::thread_init`, a thread's function).
// The box is "thread: main" when the start-up is the process's
// (`_start`/`__libc_start*`, or the executable's frame at the root),
// "thread: autograd" when the entry runs PyTorch's autograd engine (a
// `torch::autograd::...Engine::thread_...` frame from the entry inward), else
// "thread: ENTRY" with the entry's function without its argument list
// (a `std::thread` state's `_M_run` and `std::__invoke` frames skipped to the
// function they run; "module+0xOFFSET" when it has no symbol). A stack that
// does not reach its thread's start (Python frames only, a stack cut at
// --stack-depth, mixed stacks whose root is Python) keeps its root as it is,
// and so does a stack of start-up frames only.
struct ThreadRoot {
  size_t start_frames = 0;  // frames at the root replaced by `label` (0: none)
  std::string label;        // "thread: ..." when start_frames > 0
};
ThreadRoot FindThreadRoot(const model::Trace& meta, const std::vector<uint32_t>& leaf_first);

// Folds every GPU op of a finalized trace. With more than one process, each
// stack starts with its process ("rank 1 (pid 4242)" or "pid 4242 (python3)").
FoldedStacks FoldStacks(const analysis::CompactTrace& trace, FlameWeight weight);

// Streams `path` (whole trace, no window) and folds it.
StatusOr<FoldedStacks> FoldStacksOfFile(const std::string& path, FlameWeight weight,
                                        format::ReadReport* damage = nullptr);
// The same from any trace source (a run merged on the fly: cluster/run_source.h).
StatusOr<FoldedStacks> FoldStacksOfFile(format::TraceSource& source, FlameWeight weight,
                                        format::ReadReport* damage = nullptr);

// "frame;frame;...;op WEIGHT\n" per line.
void WriteFolded(const FoldedStacks& stacks, std::ostream& out);

// `tracesmith export -f folded`: FoldStacksOfFile written to `out_path`
// through AtomicFile (never a partial file, never over the input). With
// `refuse_damaged_input`, a damaged input is the error and nothing is written.
// Returns the stacks written (for the summary line) and their size in bytes.
struct FoldedFileStats {
  uint64_t bytes = 0, lines = 0, total = 0, ops = 0;
};
StatusOr<FoldedFileStats> WriteFoldedFile(const std::string& sbt_path, const std::string& out_path,
                                          FlameWeight weight, bool refuse_damaged_input = false,
                                          format::ReadReport* damage = nullptr);
// The same from any trace source; never written over one of source.files().
StatusOr<FoldedFileStats> WriteFoldedFile(format::TraceSource& source, const std::string& out_path,
                                          FlameWeight weight, bool refuse_damaged_input = false,
                                          format::ReadReport* damage = nullptr);

// The folded stacks as a tree, for drawing: a node per distinct path prefix,
// its value the sum of the lines below it; names are indexes into `names`.
struct FlameNode {
  uint32_t name = 0;
  uint64_t value = 0;
  std::vector<FlameNode> children;  // largest first
};
struct FlameTree {
  std::vector<std::string> names;  // names[0] = "all"
  FlameNode root;                  // name 0, value = total
  uint64_t nodes = 0;              // kept, root included
  uint64_t pruned_nodes = 0;       // subtrees left out for being under min_value
};
// Subtrees whose value is under `min_value` are left out (their weight stays
// in their parent's value, shown as the parent's own time): a page draws a
// few thousand boxes, not every one-launch stack of a huge trace.
// At most `max_nodes` are kept (0: no cap): the largest, ties broken by
// first appearance (a node is never smaller than a child and appears before
// it, so what is kept stays one tree).
FlameTree BuildFlameTree(const FoldedStacks& stacks, uint64_t min_value = 0, size_t max_nodes = 0);

}  // namespace tracesmith::report
