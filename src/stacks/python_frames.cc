#include "python_frames.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "tracesmith/base/hot_path.h"

namespace tracesmith::stacks {
namespace {

template <typename T>
T Load(uintptr_t addr) {
  T v;
  std::memcpy(&v, reinterpret_cast<const void*>(addr), sizeof(T));
  return v;
}

template <typename Fn>
void Resolve(Fn* fn, const char* name) {
  *fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// Offsets, from CPython's Include/cpython/pystate.h, Include/internal/
// pycore_frame.h and Include/cpython/code.h of each version (3.11 checked
// with offsetof against the installed headers).
constexpr size_t kTstateInterp = 16;  // PyThreadState.interp
constexpr size_t kTstateCframe = 56;  // PyThreadState.cframe (3.11, 3.12)
[[maybe_unused]] constexpr size_t kFrameObjectFrame =
    24;                                // PyFrameObject.f_frame (documented layout)
constexpr size_t kCodeQualname = 128;  // PyCodeObject.co_qualname
constexpr size_t kCodeFilename = 112;  // PyCodeObject.co_filename
constexpr size_t kTypeBasicsize = 32;  // PyTypeObject.tp_basicsize
constexpr size_t kObjectType = 8;      // PyObject.ob_type
// frame_in_cframe_ value meaning "the thread state points at the frame".
constexpr size_t kDirect = ~size_t{0};

}  // namespace

PythonFrames& PythonFrames::Get() {
  static PythonFrames* instance = new PythonFrames();  // never destroyed: used at exit
  return *instance;
}

void PythonFrames::Reload() {
  std::lock_guard<std::mutex> lock(reload_mu_);
  if (present()) return;
  const char* (*get_version)() = nullptr;
  Resolve(&get_version, "Py_GetVersion");
  if (!get_version) return;
  int major = 0, minor = 0;
  if (std::sscanf(get_version(), "%d.%d", &major, &minor) != 2 || major != 3) return;
  minor_ = minor;
  if (minor == 11) {
    frame_in_cframe_ = 8;  // _PyCFrame { uint8_t use_tracing; _PyInterpreterFrame* current_frame; }
    code_in_frame_ = 32;
    previous_in_frame_ = 48;
    instr_in_frame_ = 56;
    is_entry_in_frame_ = 68;
  } else if (minor == 12) {
    frame_in_cframe_ = 0;
    code_in_frame_ = 0;
    previous_in_frame_ = 8;
    instr_in_frame_ = 56;
    owner_in_frame_ = 70;
    cstack_owner_ = 3;  // FRAME_OWNED_BY_CSTACK: the entry shim of each eval activation
  } else if (minor == 13) {
    // 3.13 dropped _PyCFrame: PyThreadState.current_frame, after the new
    // eval_breaker/_whence/state fields. f_code became f_executable (same
    // place), prev_instr became instr_ptr (same place, same arithmetic).
    frame_in_cframe_ = kDirect;
    cframe_in_tstate_ = 72;
    code_in_frame_ = 0;
    previous_in_frame_ = 8;
    instr_in_frame_ = 56;
    owner_in_frame_ = 70;
    cstack_owner_ = 3;
  } else {
    return;  // other layouts: not supported (3.14 changed the frame again)
  }
  if (minor != 13) cframe_in_tstate_ = kTstateCframe;
  Resolve(&is_initialized_, "Py_IsInitialized");
  Resolve(&this_thread_state_, "PyGILState_GetThisThreadState");
  Resolve(&addr2line_, "PyCode_Addr2Line");
  Resolve(&unicode_length_, "PyUnicode_GetLength");
  Resolve(&unicode_read_char_, "PyUnicode_ReadChar");
  Resolve(&interpreter_of_, "PyThreadState_GetInterpreter");
  // (Renamed in 3.13; the old name may be gone.) Optional: without them
  // every frame is described on the thread that walked it.
  Resolve(&current_thread_state_, "PyThreadState_GetUnchecked");
  if (!current_thread_state_) Resolve(&current_thread_state_, "_PyThreadState_UncheckedGet");
  Resolve(&incref_, "Py_IncRef");
  unicode_type_ = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "PyUnicode_Type"));
  code_type_ = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "PyCode_Type"));
  if (!is_initialized_ || !this_thread_state_ || !addr2line_ || !unicode_length_ ||
      !unicode_read_char_ || !interpreter_of_ || !code_type_ || !unicode_type_) {
    return;
  }
  // The code units of a code object start at offsetof(co_code_adaptive),
  // which CPython stores as the type's tp_basicsize.
  first_instr_in_code_ = size_t(Load<intptr_t>(code_type_ + kTypeBasicsize));
  // Range of _PyEval_EvalFrameDefault, from its ELF symbol size.
  void* eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  Dl_info info;
  void* sym_ptr = nullptr;
  if (eval && dladdr1(eval, &info, &sym_ptr, RTLD_DL_SYMENT) && sym_ptr) {
    const auto* sym = static_cast<const ElfW(Sym)*>(sym_ptr);
    eval_start_ = reinterpret_cast<uint64_t>(eval);
    eval_size_ = sym->st_size;
  }
  present_.store(true, std::memory_order_release);
}

uintptr_t PythonFrames::CurrentFrame(uintptr_t tstate) const {
  uintptr_t p = Load<uintptr_t>(tstate + cframe_in_tstate_);
  if (frame_in_cframe_ == kDirect || !p) return p;
  return Load<uintptr_t>(p + frame_in_cframe_);
}

bool PythonFrames::Validate(uintptr_t tstate) {
  // A structural check of the layout, on the first thread state that has
  // Python frames: the thread state's interpreter field agrees with the
  // API, and every frame of the chain holds a code object whose name and
  // file are str objects, up to a null end. No frame API is used: it needs
  // the GIL (launches often run without it) and materializes frame objects,
  // an allocation that may run the garbage collector inside a CUDA call.
  if (reinterpret_cast<uintptr_t>(interpreter_of_(reinterpret_cast<void*>(tstate))) !=
      Load<uintptr_t>(tstate + kTstateInterp)) {
    return Fail();
  }
  uintptr_t f = CurrentFrame(tstate);
  if (!f) return false;  // no Python frame yet: check on a later capture
  int checked = 0;
  for (int guard = 0; f; ++guard, f = Load<uintptr_t>(f + previous_in_frame_)) {
    if (guard == 100000) return Fail();
    if (owner_in_frame_ >= 0 && Load<int8_t>(f + owner_in_frame_) == cstack_owner_) continue;
    uintptr_t code = Load<uintptr_t>(f + code_in_frame_);
    if (!code || Load<uintptr_t>(code + kObjectType) != code_type_) return Fail();
    for (size_t field : {kCodeQualname, kCodeFilename}) {
      uintptr_t str = Load<uintptr_t>(code + field);
      if (!str || Load<uintptr_t>(str + kObjectType) != unicode_type_) return Fail();
    }
    ++checked;
  }
  if (checked == 0) return false;
  validated_.store(1, std::memory_order_relaxed);
  return true;
}

bool PythonFrames::Fail() {
  validated_.store(-1, std::memory_order_relaxed);
  std::fprintf(stderr, "tracesmith: Python 3.%d frame layout check failed; Python frames are off\n",
               minor_);
  return false;
}

TS_HOT uintptr_t PythonFrames::Top() {
  if (!present() || !is_initialized_()) return 0;
  // The thread state bound to this OS thread, whether or not it holds the
  // GIL right now (a TSS read, no lock).
  auto tstate = reinterpret_cast<uintptr_t>(this_thread_state_());
  if (!tstate) return 0;
  int v = validated_.load(std::memory_order_relaxed);
  if (v < 0 || (v == 0 && !Validate(tstate))) return 0;
  return CurrentFrame(tstate);
}

TS_HOT int PythonFrames::WalkFrom(uintptr_t f, PyFrameRef* out, int max_frames, uintptr_t* entry) {
  int n = 0;
  if (entry) *entry = 0;
  // 100000: more than any real recursion limit; a corrupt cycle stops here.
  for (int guard = 0; f && n < max_frames && guard < 100000; ++guard) {
    if (owner_in_frame_ >= 0 && Load<int8_t>(f + owner_in_frame_) == cstack_owner_) {
      if (entry && !*entry) *entry = f;
      if (n > 0) out[n - 1].ends_segment = true;
      f = Load<uintptr_t>(f + previous_in_frame_);
      continue;
    }
    // The code object itself is not read here (its type is checked when
    // the frame is first described): a line of cold memory per frame.
    uintptr_t code = Load<uintptr_t>(f + code_in_frame_);
    if (!code) break;
    intptr_t offset = Load<intptr_t>(f + instr_in_frame_) - intptr_t(code + first_instr_in_code_);
    PyFrameRef& r = out[n++];
    r.code = code;
    r.offset = offset < 0 ? 0 : int32_t(offset);
    r.ends_segment = is_entry_in_frame_ >= 0 && Load<uint8_t>(f + is_entry_in_frame_) != 0;
    f = Load<uintptr_t>(f + previous_in_frame_);
  }
  if (n > 0) out[n - 1].ends_segment = true;
  return n;
}

std::string PythonFrames::ReadUnicode(uintptr_t str) const {
  // PyUnicode_GetLength/ReadChar neither allocate nor need the GIL for an
  // immutable str, unlike PyUnicode_AsUTF8 (which may build a cache).
  std::string out;
  if (!str) return out;
  void* s = reinterpret_cast<void*>(str);
  intptr_t len = unicode_length_(s);
  for (intptr_t i = 0; i < len && i < 4096; ++i) {
    uint32_t c = unicode_read_char_(s, i);
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xc0 | (c >> 6));
      out += char(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += char(0xe0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3f));
      out += char(0x80 | (c & 0x3f));
    } else {
      out += char(0xf0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3f));
      out += char(0x80 | ((c >> 6) & 0x3f));
      out += char(0x80 | (c & 0x3f));
    }
  }
  return out;
}

void PythonFrames::Describe(const PyFrameRef& f, std::string* function, std::string* file,
                            uint32_t* line) const {
  if (Load<uintptr_t>(f.code + kObjectType) != code_type_) {
    // Not a code object (a frame the walk does not know how to read).
    *function = "<unknown Python frame>";
    file->clear();
    *line = 0;
    return;
  }
  *function = ReadUnicode(Load<uintptr_t>(f.code + kCodeQualname));
  *file = ReadUnicode(Load<uintptr_t>(f.code + kCodeFilename));
  int l = addr2line_(reinterpret_cast<void*>(f.code), f.offset);
  *line = l > 0 ? uint32_t(l) : 0;
}

}  // namespace tracesmith::stacks
