// torch.profiler's python_function slices (with_stack=True), rebuilt from the
// host call stacks TraceSmith records at each launch (StackNode rows), for
// the Kineto JSON export (docs/export.md, "Chrome / Kineto JSON"). A capture
// has no function entry and exit times, only the stack of each call; so on
// each thread, consecutive calls whose stacks share a prefix of functions
// share those functions' slices: a slice runs from the start of the first
// call seen under it to the end of the last one of the same run (a call whose
// stack leaves the function closes it). Durations are lower bounds, and two
// calls of one function in a row with nothing launched between them merge
// into one. A slice is named "file(line): function" as torch names it, with
// the lowest line seen under it (torch's is the function's first line).
// Python frames only when the trace has any (torch writes no native frames;
// a Python program's native-only stacks, e.g. of the autograd thread, have
// no python_function slices); a trace of native frames only (a C++ program)
// keeps them all.
//
// The same rebuilding gives torch's cpu_op slices of PyTorch programs
// (Frames::kTorchOps): from the native frames where the dispatcher enters an
// operator (at::_ops::<op>::call, where torch's RecordFunction records
// "aten::<op>") and where the autograd engine runs a backward node
// (torch::autograd::generated::<Node>::apply: torch's
// "autograd::engine::evaluate_function: <Node>"), and torch.optim's step
// hook (its user_annotation "Optimizer.step#<Class>.step", the class of the
// first "<Class>.step" frame below it: the one defining step, e.g. Adam for
// an AdamW, whose name torch takes from the object). Their slices are one
// operator call, not one function: two launches share an op's slice only
// when their stacks are the same from the root down to the op's frame
// (Python lines and return addresses included), so ops called from two
// lines are two slices; an op's slice still begins at its first launch.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::exporter {

// "aten::<op>" of a dispatcher entry frame (at::_ops::<op>_<overload>::call),
// "autograd::engine::evaluate_function: <Node>" of a backward node's apply;
// "" for any other function. The overload is dropped as torch's names do
// (add__Tensor: aten::add_, sum_dim_IntList: aten::sum, to_dtype: aten::to).
std::string TorchOpName(std::string_view function);

class PythonFunctionSlices {
 public:
  enum class Frames { kPython, kTorchOps };
  struct Slice {
    // "file(line): function" (kTorchOps: torch's name), valid until the next call
    std::string_view name;
    uint32_t pid, tid;
    uint64_t start_ns, end_ns;
    uint64_t id, parent_id;  // "Python id", "Python parent id" (0: a root)
    uint32_t thread;         // "Python thread": the thread's number, in order of first call
  };
  using Emit = std::function<void(const Slice&)>;

  explicit PythonFunctionSlices(const model::Trace* meta, Frames frames = Frames::kPython)
      : meta_(meta), mode_(frames), python_program_(HasPythonFrames(*meta)) {}
  // A call with its stack (0: none, ignored), in start order per thread;
  // emits the frames the call's stack closes.
  void OnCall(uint32_t pid, uint32_t tid, uint32_t stack_id, uint64_t start_ns, uint64_t end_ns,
              const Emit& emit);
  // Closes every open frame.
  void Finish(const Emit& emit);
  // The innermost open slice of the thread whose name begins with `prefix` (its id; 0:
  // none), and its name (valid until the next call).
  uint64_t OpenSlice(uint32_t pid, uint32_t tid, std::string_view prefix, std::string_view* name);

 private:
  struct Kept {
    uint32_t frame;
    uint64_t function;  // FunctionOf (kPython); the stack down to the frame (kTorchOps)
  };
  struct Open {
    uint32_t frame;     // of the lowest line seen under it (the slice's name)
    uint64_t function;  // Kept::function
    uint64_t start_ns, end_ns, id;
  };
  struct Thread {
    uint32_t pid = 0, tid = 0, number = 0;
    std::vector<Open> open;  // root first
  };
  static bool HasPythonFrames(const model::Trace& meta);
  const std::vector<Kept>& FramesOf(uint32_t stack_id);
  const std::string& NameOf(uint32_t frame_id);
  uint64_t FunctionOf(uint32_t frame_id) const;
  void Close(Thread* t, size_t keep, const Emit& emit);

  const model::Trace* meta_;
  Frames mode_;
  bool python_program_;  // the trace has Python frames: only those are python_function
  std::unordered_map<uint32_t, std::vector<Kept>> frames_;  // stack id -> kept, root first
  std::unordered_map<uint32_t, std::string> names_;         // frame id -> slice name
  std::unordered_map<uint64_t, Thread> threads_;            // (pid, tid)
  std::vector<uint64_t> thread_order_;                      // keys in order of first call
  uint64_t next_id_ = 1;
};

}  // namespace tracesmith::exporter
