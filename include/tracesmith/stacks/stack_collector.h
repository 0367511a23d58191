// StackCollector: captures the calling thread's call stack (native, Python
// or both) at CUDA API entry and turns it into a deduplicated stack id.
//
// Hot path (CaptureStack): unwind (see unwinder.h), walk the Python frame
// chain, hash the frames (128 bits) and look the stack up, first in a
// per-thread cache of its 64 recent stacks, then in a lock-free table that keeps
// the hash and the id only. A stack seen before costs no allocation, lock or
// syscall. The first sighting of a
// stack takes a mutex, interns its frames and call-site-tree nodes and
// queues the new Mapping/Frame/StackNode rows; Drain() hands them to the
// trace writer in id order.
//
// Ids: a stack id is the 1-based StackNode id of the stack's innermost
// frame, frame ids are 1-based Frame rows and mapping ids 1-based Mapping
// rows, exactly as the rows are appended by Drain. The writer's Mapping,
// Frame and StackNode tables therefore belong to one collector.
//
// Native frames are stored unsymbolized: rel_pc is the return address
// minus the module's load bias (an ELF virtual address in that file; look
// up rel_pc - 1), mapping_id names the module's path and GNU build-id.
// Python frames are stored resolved (qualified name, file, line), with
// mapping_id 0. In mixed mode the native frames end at the innermost
// _PyEval_EvalFrameDefault frame, which is replaced by all the Python frames
// (the interpreter's own native frames between and above them are not
// walked); in full mode every native frame is walked and each eval-loop
// frame is replaced by the Python frames it was running. Python frames are read
// whether or not the thread holds the GIL (Triton launchers release it), for
// CPython 3.11-3.13; other versions give native frames only.
//
// Deferred interning (options.defer_interning, the capture's setting): a
// stack seen for the first time gets a provisional id at once
// (model::kProvisionalStackId and up) and its keys are handed to the writer,
// which interns them (frames, nodes) in ResolveDeferred, outside the
// program's CUDA call. A provisional id names its stack for good: Settled()
// gives the final one, and an SbtWriter given to AttachWriter turns them into
// final ids as rows are appended. A Python frame's code object may be freed
// before the writer runs, so a new (code, offset) is described where it is
// safe: a thread that holds the GIL takes a reference to the code object
// (never released: a code object seen in a stack lives as long as the
// process) and the writer describes it; a thread without the GIL (PyTorch's
// operators and Triton's launchers release it before launching) describes it
// itself and queues the text with the keys.
//
// Limits: a module unloaded and another loaded at the same address keeps
// the old module's cached unwind rules and mapping; a Python code object
// freed and another allocated at its address is described as the old one.
// A walk handed to the writer (deferred walks) reads the unwind tables of the
// modules in its copy at the writer's next poll (5 ms at most later): a
// module the program unloads in between is not guarded against (a walk on
// the thread reads only modules its stack is running in).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/model/records.h"
#include "tracesmith/stacks/flat_map.h"
#include "tracesmith/stacks/stack_mode.h"
#include "tracesmith/stacks/unwinder.h"

namespace tracesmith::format {
class SbtWriter;
}

namespace tracesmith::stacks {

struct PyFrameRef;  // python_frames.h
struct ColdStop;    // walk_memo.h
struct CodeRange;   // stack_hash.h
class ModuleRegistry;

// mixed when a supported Python interpreter is loaded in this process, else native.
StackMode DefaultStackMode();

struct StackCollectorOptions {
  StackMode mode = StackMode::kMixed;
  // Frames kept per stack (at most 256); deeper stacks lose their
  // outermost frames. 256 by default: a launch from Python passes through
  // dozens of framework frames, and the script's own lines are outermost.
  int max_depth = 256;
  // Innermost frames to drop below the caller of CaptureStack (not when the
  // walk is given its starting frame).
  int skip_frames = 0;
  // Then innermost frames are dropped while they lie in a module whose path
  // contains one of these, e.g. {"libcupti", "libcuda.so"}, so that a stack
  // starts at the application's CUDA call. Modules are looked up when the
  // collector is constructed.
  std::vector<std::string> trim_modules;
  // Also drop innermost frames in the module holding this code (the
  // injection library).
  bool trim_own_module = false;
  // Intern new stacks on the writer (see above); and a walk that meets a return address
  // without an unwind rule is finished there too, from a copy of the stack (ColdStop,
  // stack_collector_walks.cc), in a buffer of `walk_copy_bytes` per writer poll (4 MiB: 64
  // walks of 64 KiB; two are kept; 0: walks are finished on their thread).
  bool defer_interning = false;
  size_t walk_copy_bytes = size_t{4} << 20;
};

struct StackCollectorStats {
  uint64_t new_stacks = 0;      // distinct stacks cached (first sightings)
  uint64_t frames = 0;          // Frame rows created
  uint64_t nodes = 0;           // StackNode rows created
  uint64_t mappings = 0;        // Mapping rows created
  uint64_t table_full = 0;      // captures that found the table full (right id, slow path)
  uint64_t unknown_module = 0;  // native frames outside every loaded module
  // PrepareModules: modules prepared, bytes of unwind tables faulted in, and
  // the writer's CPU time for it (the first-time work it took off the
  // program's threads).
  uint64_t modules_prepared = 0;
  uint64_t unwind_bytes_prepared = 0;
  uint64_t prepare_cpu_ns = 0;
  uint64_t tables_grown = 0;  // interning tables grown ahead by the writer (GrowAhead)
  // Deferred interning: stacks handed to the writer, Python frames described on a thread
  // without the GIL, code objects pinned, and provisional ids an appended row named before
  // ResolveDeferred had run for them.
  uint64_t deferred = 0;
  uint64_t described_without_gil = 0;  // Python frames described on the launching thread
  uint64_t pinned_code_objects = 0;
  uint64_t resolved_on_append = 0;
  uint64_t python_frames_from_text = 0;   // interned from a description queued by its thread
  uint64_t python_frames_after_exit = 0;  // pinned, not described: the interpreter had exited
  // Deferred walks: stacks whose walk met a return address without a rule and was finished by
  // the writer from a copy of the stack (also counted in `deferred`); walks finished on their
  // thread for want of room; walks whose copy ended before the walk did (their outer native
  // frames missing).
  uint64_t walks_deferred = 0;
  uint64_t walks_finished_on_thread = 0;
  uint64_t walks_cut = 0;
  uint64_t walk_bytes_read_max = 0;  // the most of its copy one deferred walk read
};

// Where one CaptureStack call spent its time (CpuTicks), for the capture's
// capture-cost accounting; filled only when a pointer is passed.
struct StackTiming {
  uint64_t unwind_ticks = 0;  // native unwind (first-time work not included)
  uint64_t python_ticks = 0;  // Python frame walk
  int native_frames = 0, python_frames = 0;
  // Diagnostic: with `rewalk` set, the native and Python walks are done a
  // second time at once and timed (rewalk_ticks): the same work with the
  // caches and branch predictors warm, against unwind + python in situ.
  bool rewalk = false;
  uint64_t rewalk_ticks = 0;
  // The CFA of the walk's outermost frame when the native frames are a
  // memo entry's, replayed whole (0 otherwise): with the caller's CFA, the
  // span of stack the walk read (the copy probe, engine_stacks.cc).
  uint64_t last_cfa = 0;
};

class StackCollector {
 public:
  explicit StackCollector(StackCollectorOptions options = {});
  ~StackCollector();
  StackCollector(const StackCollector&) = delete;
  StackCollector& operator=(const StackCollector&) = delete;

  // The calling thread's stack id; 0 when the mode is none or no frame was
  // found. Thread-safe; lock-free for stacks seen before. With `timing`,
  // also the time of its phases (what is left is merge, hash and lookup).
  // With `from` (see TRACESMITH_CALLER_FRAME), the native walk starts at
  // that frame and skip_frames is not applied.
  uint32_t CaptureStack(StackTiming* timing = nullptr, const CallerFrame* from = nullptr);

  // Writer thread, at the capture's start and then every poll: the modules
  // loaded since the last call (every module at the first) are made ready
  // for their first stack: their unwind tables (.eh_frame_hdr, .eh_frame)
  // faulted in and the module registered (path, build-id), so that a new
  // return address there costs the launching thread no page fault and no ELF
  // read (src/stacks/prepare_modules.cc); at the first call the rule cache's
  // pages too. Cheap when nothing was loaded: one
  // dl_iterate_phdr step. Never faults, even on a module unloaded meanwhile.
  void PrepareModules();

  // Appends the rows created since the last Drain (Mapping, Frame,
  // StackNode) and their strings to `writer`, after interning the stacks
  // deferred since (ResolveDeferred). Call from the writer thread, before
  // appending events whose stack ids were returned before this call.
  void Drain(format::SbtWriter* writer);

  // Deferred interning. ResolveDeferred (one thread at a time: the writer's)
  // interns the stacks handed over so far and settles their provisional ids.
  // Settled: the final id of a provisional one once resolved (any other id as
  // is; a provisional one not resolved yet as is). AttachWriter: `writer`
  // resolves provisional ids through this collector as rows are appended,
  // interning and draining first when one is not resolved yet (a row
  // collected after this poll's Drain); the collector must outlive it.
  void ResolveDeferred();
  uint32_t Settled(uint32_t id) const;
  void AttachWriter(format::SbtWriter* writer);

  // The frames of a stack id captured by this collector, innermost first, as
  // stored (tests, debugging). Takes the lock.
  std::vector<model::Frame> FramesOf(uint32_t stack_id);
  std::vector<uint32_t> FrameIdsOf(uint32_t stack_id);
  // Strings queued with frames: function and file of a Python frame id.
  std::pair<std::string, std::string> PythonFrameStrings(uint32_t frame_id);

  StackCollectorStats stats();
  const StackCollectorOptions& options() const { return options_; }

 private:
  struct Slot;
  struct PendingFrame;
  struct PendingMapping;
  [[gnu::noinline]] uint32_t SlowPath(const uint64_t* keys, int n, uint64_t hash, uint64_t hash2);
  [[gnu::noinline]] uint32_t Defer(const uint64_t* keys, int n, uint64_t hash, uint64_t hash2);
  // A walk stopped at a new return address (`cold`): its native frames so far, its Python
  // frames, a copy of the stack queued for the writer (stack_collector_walks.cc). `py_entry`:
  // where the walk will end under Python (PythonFrames::WalkFrom's entry), 0 if not known. A
  // provisional id, or 0 when there is no room: the caller finishes the walk.
  [[gnu::noinline]] uint32_t DeferWalk(const uint64_t* pcs, int n_native, const PyFrameRef* py,
                                       int n_py, const ColdStop& cold, const CodeRange* stop,
                                       uintptr_t py_entry);
  // (under defer_mu_) Each Python frame of `keys` (pairs: kPythonTag | offset, code) that the
  // writer could not describe yet: with the GIL its code object pinned, else described here,
  // the description appended to `out` (2 words: the key's index, the text in deferred_text_).
  // The number of descriptions.
  uint64_t QueueDescriptions(const uint64_t* keys, int n, bool gil, std::vector<uint64_t>* out);
  // (writer) The walk record at `r` finished from its copy and interned; the words it took.
  size_t ResolveWalk(const uint64_t* r, const uint64_t* copies, const std::string& text);
  // (under mu_) frames and nodes: the id. `described`: the record's descriptions of Python
  // frames (2 words each, in key order, text in `text`; see stack_collector_defer.cc).
  // `on_writer`: a deferred record's, whose code objects not described in it are pinned.
  uint32_t InternKeys(const uint64_t* keys, int n, const uint64_t* described = nullptr,
                      int n_described = 0, const char* text = nullptr, bool on_writer = false);
  bool Publish(uint64_t hash, uint64_t hash2, uint32_t id);  // false: the table is full
  // The table's slot of (hash, hash2), or nullptr; *empty (when given): the first free slot of
  // its probe chain, nullptr when the chain is full. Fill: a free slot taken (under defer_mu_).
  Slot* Find(uint64_t hash, uint64_t hash2, Slot** empty = nullptr) const;
  static void Fill(Slot* slot, uint64_t hash, uint64_t hash2, uint32_t id);
  uint32_t InternNativeFrame(uint64_t pc);
  void GrowAhead();  // (writer, under mu_) the interning tables grown before they are half full
  // A description given (function, file, line) is used instead of reading the code object.
  // On the writer, a pinned code object is described only while the interpreter is
  // initialized (finalization may free its strings).
  uint32_t InternPythonFrame(uint64_t code, int32_t offset, const std::string* function = nullptr,
                             const std::string* file = nullptr, uint32_t line = 0,
                             bool on_writer = false);

  StackCollectorOptions options_;
  uint64_t serial_;  // tells collectors apart in per-thread caches (addresses are reused)
  std::unique_ptr<Slot[]> table_;
  std::vector<CodeRange> trim_;  // fixed after construction

  // Deferred interning: records (stack_collector_defer.cc) and their
  // descriptions' text waiting for the writer, spare buffers the writer
  // reserves ahead, the next provisional index, the code objects pinned, the
  // Python keys (code | offset << 48) the writer will be able to describe
  // (pinned, or described in a queued record), and each provisional index's
  // final id (0 until resolved). defer_mu_ also orders
  // every insertion into table_ (Publish); it is taken alone or inside mu_,
  // never around it. resolve_mu_: one ResolveDeferred at a time.
  std::mutex defer_mu_, resolve_mu_;
  std::vector<uint64_t> deferred_, deferred_spare_;
  std::string deferred_text_, deferred_text_spare_;
  uint32_t next_provisional_ = 0;
  FlatMapU64 pinned_, described_;
  uint64_t deferred_count_ = 0, described_without_gil_ = 0;  // (under defer_mu_)
  // Deferred walks' stack copies (walk_copy_bytes each, pages present): the one threads fill
  // (under defer_mu_) and the writer's; the records are in deferred_, marked by a 0 word.
  std::unique_ptr<uint64_t[]> walk_copy_, walk_copy_spare_;
  size_t walk_copy_used_ = 0;
  uint64_t walks_deferred_ = 0;  // (under defer_mu_)
  std::atomic<uint64_t> walks_finished_on_thread_{0}, walks_cut_{0}, walk_bytes_read_max_{0};
  std::unique_ptr<std::atomic<uint32_t>[]> settled_;
  std::atomic<uint64_t> resolved_on_append_{0};
  format::SbtWriter* attached_ = nullptr;

  std::mutex mu_;  // slow path and Drain only
  std::unique_ptr<ModuleRegistry> modules_;
  FlatMapU64 native_frames_;                                      // pc -> frame id
  std::map<std::pair<uint64_t, int32_t>, uint32_t> python_keys_;  // (code, offset) -> frame id
  std::unordered_map<std::string, uint32_t> python_frames_;       // "func\0file\0line" -> frame id
  FlatMapU64 nodes_;                                              // parent << 32 | frame -> node id
  std::vector<model::Frame> frames_;                              // all frames, by id - 1
  std::vector<model::StackNode> nodes_by_id_;                     // all nodes, by id - 1
  std::unordered_map<uint32_t, std::pair<std::string, std::string>> python_strings_;
  std::vector<PendingMapping> pending_mappings_;
  std::vector<PendingFrame> pending_frames_;
  std::vector<model::StackNode> pending_nodes_;
  uint32_t next_mapping_id_ = 1;
  StackCollectorStats stats_;
  // PrepareModules' state (its caller's thread only): the loader's load and
  // unload counts last seen, the start of every module prepared.
  uint64_t prepared_adds_ = 0, prepared_subs_ = 0;
  std::set<uintptr_t> prepared_tables_;
};

}  // namespace tracesmith::stacks
