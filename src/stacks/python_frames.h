// PythonFrames: the calling thread's CPython frame chain, read without the
// GIL and without allocating, through the interpreter's own symbols found at
// run time (no build-time Python dependency).
//
// Why raw reads: the public frame API (PyThreadState_GetFrame, PyFrame_*)
// materializes frame objects (allocation) and needs the GIL, which Triton
// launchers and many extensions release before launching. A thread's own
// _PyInterpreterFrame chain stays valid and unchanged while that thread is
// in C code, GIL or not, so reading it is safe. The struct offsets differ
// per CPython minor version: 3.11, 3.12 and 3.13 are supported. Before the
// first raw walk is trusted, the layout is checked once structurally (types
// of every object reached, chain termination); a mismatch disables Python
// frames with a warning.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "stack_hash.h"  // CodeRange

namespace tracesmith::stacks {

// One Python frame: the code object and the byte offset of its current
// instruction. `ends_segment`: the outermost frame run by one native
// _PyEval_EvalFrameDefault activation (where the next native frames resume).
// Trivial (no initializers): the hot path keeps arrays of these on the
// stack and must not pay for zeroing them.
struct PyFrameRef {
  uint64_t code;
  int32_t offset;
  bool ends_segment;
};

class PythonFrames {
 public:
  // The process-wide instance; resolves the interpreter symbols on first use.
  static PythonFrames& Get();
  // Resolves again if no interpreter was found before (one was loaded since,
  // e.g. an embedded interpreter). Not for the hot path: dlsym takes a lock.
  void Reload();

  // Interpreter present with a supported version.
  bool present() const { return present_.load(std::memory_order_acquire); }
  int minor_version() const { return minor_; }
  // False after the one-time check failed.
  bool usable() const { return present() && validated_.load(std::memory_order_relaxed) >= 0; }

  // Hot path: the calling thread's innermost Python frame (an opaque
  // address), 0 when the thread has no Python state or frame, or before the
  // one-time check could run.
  uintptr_t Top();
  // Hot path: the frames from `top` (Top()) outwards, innermost first. With `entry` (3.12 and
  // 3.13): *entry is the address of the innermost eval-loop activation's entry frame, a local
  // of that _PyEval_EvalFrameDefault call on the native stack (0 when not met): a native walk
  // that ends at the innermost eval-loop frame reads nothing above it.
  int WalkFrom(uintptr_t top, PyFrameRef* out, int max_frames, uintptr_t* entry = nullptr);

  // True when `return_address` lies in _PyEval_EvalFrameDefault, the native
  // frame a Python segment replaces in a mixed stack.
  bool IsEvalFrame(uint64_t return_address) const {
    return return_address - 1 - eval_start_ < eval_size_;
  }
  bool knows_eval_frame() const { return eval_size_ != 0; }
  // _PyEval_EvalFrameDefault's code ({0, 0} when not known).
  CodeRange eval_range() const { return CodeRange{eval_start_, eval_start_ + eval_size_}; }

  // Py_IsInitialized(): false once the interpreter's finalization has begun.
  bool Initialized() const { return present() && is_initialized_(); }
  // Whether the calling thread holds the GIL now (its thread state is the
  // attached one); false when that cannot be told. A thread that holds it
  // keeps it for as long as it runs no Python code.
  bool HoldsGil() const {
    return current_thread_state_ && incref_ && current_thread_state_() != nullptr &&
           current_thread_state_() == this_thread_state_();
  }
  // Keeps the code object `code` (of a frame WalkFrom returned on this
  // thread) alive from now on: a new reference, never released. Only while
  // HoldsGil().
  void Pin(uint64_t code) const { incref_(reinterpret_cast<void*>(code)); }

  // Slow path: qualified name, file and line of a frame returned by Walk on
  // this thread in the same capture (its code object is alive, or pinned).
  void Describe(const PyFrameRef& f, std::string* function, std::string* file,
                uint32_t* line) const;

 private:
  PythonFrames() { Reload(); }
  bool Validate(uintptr_t tstate);
  bool Fail();
  uintptr_t CurrentFrame(uintptr_t tstate) const;
  std::string ReadUnicode(uintptr_t str) const;

  std::atomic<bool> present_{false};  // set last, with release, by Reload
  std::mutex reload_mu_;
  int minor_ = 0;
  // -1 failed, 0 not yet checked, 1 checked.
  std::atomic<int> validated_{0};
  uint64_t eval_start_ = 0, eval_size_ = 0;
  uintptr_t code_type_ = 0;
  // Per-version layout. The current frame is tstate->cframe->current_frame
  // (3.11, 3.12) or tstate->current_frame (3.13, frame_in_cframe_ = ~0).
  size_t cframe_in_tstate_ = 0, frame_in_cframe_ = 0;
  size_t code_in_frame_ = 0, previous_in_frame_ = 0, instr_in_frame_ = 0;
  ptrdiff_t is_entry_in_frame_ = -1, owner_in_frame_ = -1;
  int cstack_owner_ = -1;
  size_t first_instr_in_code_ = 0;
  // C API, resolved with dlsym.
  int (*is_initialized_)() = nullptr;
  void* (*this_thread_state_)() = nullptr;
  int (*addr2line_)(void*, int) = nullptr;
  intptr_t (*unicode_length_)(void*) = nullptr;
  uint32_t (*unicode_read_char_)(void*, intptr_t) = nullptr;
  void* (*interpreter_of_)(void*) = nullptr;
  void* (*current_thread_state_)() = nullptr;  // the attached thread state, unchecked
  void (*incref_)(void*) = nullptr;
  uintptr_t unicode_type_ = 0;
};

}  // namespace tracesmith::stacks
