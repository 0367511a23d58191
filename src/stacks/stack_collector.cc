#include "tracesmith/stacks/stack_collector.h"

#include <unistd.h>

#include <cstring>

#include "module_registry.h"
#include "python_frames.h"
#include "stack_collector_internal.h"
#include "stack_hash.h"
#include "tracesmith/base/clock.h"
#include "tracesmith/base/first_time_cost.h"
#include "tracesmith/base/hot_path.h"
#include "tracesmith/stacks/unwinder.h"
#include "walk_memo.h"

namespace tracesmith::stacks {
namespace {

// The calling thread's recent stacks, by hash: a launch from a place this
// thread launched from lately (the common case in a training loop) is
// answered from 2 KiB of thread-local memory instead of the shared 3 MiB
// table, whose lines and pages are cold after a framework's work between
// two launches.
struct RecentStack {
  uint64_t collector = 0;  // StackCollector::serial_ (0: none)
  uint64_t h1 = 0, h2 = 0;
  uint32_t id = 0;
};
constexpr int kRecentBits = 6;
thread_local RecentStack t_recent[1 << kRecentBits];

// The hash of a Python frame list as the merge reads it (code, offset,
// segment ends) and whether eval-loop frames are replaced by them.
inline void HashPythonFrames(const PyFrameRef* py, int n, bool merge, uint64_t* h1, uint64_t* h2) {
  uint64_t a = kStackHashSeed ^ uint64_t(merge), b = kStackHashSeed + 1;
  for (int i = 0; i < n; ++i) {
    a = StackHashStep(a, py[i].code);
    b = StackHashStep(b, uint64_t(uint32_t(py[i].offset)) << 1 | uint64_t(py[i].ends_segment));
  }
  *h1 = StackHashFinish(StackHashStep(a, b), n);
  *h2 = StackHashStep(b ^ 0x5bd1e995u, a) ^ uint64_t(n);
}

// The rewalk diagnostic (StackTiming::rewalk): the native and Python walks
// once more, timed. Out of line, so that its scratch is on the stack only
// in diagnostic runs (CaptureStack's own frame is bounded, see above).
[[gnu::noinline, gnu::cold]] uint64_t Rewalk(WalkMemo* memo, StackMode mode, int max_depth,
                                             int skip, const CodeRange* trim, int n_trim,
                                             const CallerFrame* from) {
  uint64_t pcs[kMaxDepthLimit];
  PyFrameRef py[kMaxDepthLimit];
  MemoEntry* whole = nullptr;
  const uint64_t t0 = CpuTicks(), first0 = t_first_time_ticks;
  PythonFrames& python = PythonFrames::Get();
  const uintptr_t py_top = mode != StackMode::kNative ? python.Top() : 0;
  const CodeRange eval = py_top ? python.eval_range() : CodeRange{0, 0};  // (see CaptureStack)
  const CodeRange* stop =
      mode == StackMode::kMixed && py_top && eval.end != eval.start ? &eval : nullptr;
  if (mode != StackMode::kPython)
    (void)UnwindNativeTrimmedMemo(memo, &whole, pcs, max_depth, skip, trim, n_trim, from, stop);
  if (py_top) (void)python.WalkFrom(py_top, py, max_depth);
  return CpuTicks() - t0 - (t_first_time_ticks - first0);
}

void RememberId(WalkMemo* memo, const MemoEntry* entry, uint64_t owner, uint64_t py1, uint64_t py2,
                uint32_t id) {
  MemoIdSlot(memo, entry, py1) = MemoId{owner, py1, py2, entry->serial, id};
}

}  // namespace

StackMode DefaultStackMode() {
  PythonFrames::Get().Reload();
  return PythonFrames::Get().present() ? StackMode::kMixed : StackMode::kNative;
}

static std::atomic<uint64_t> g_collector_serial{0};

StackCollector::StackCollector(StackCollectorOptions options)
    : options_(options),
      serial_(g_collector_serial.fetch_add(1) + 1),
      table_(new Slot[size_t{1} << kTableBits]),
      modules_(std::make_unique<ModuleRegistry>()) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    GrowAhead();  // (a first size; then the writer keeps them ahead: stack_collector_drain.cc)
  }
  if (options_.defer_interning) {
    settled_.reset(new std::atomic<uint32_t>[kMaxProvisional]());
    deferred_.reserve(kDeferredWords);
    deferred_spare_.reserve(kDeferredWords);
    deferred_text_.reserve(kDeferredText);
    deferred_text_spare_.reserve(kDeferredText);
    pinned_.Reserve(4096);
    described_.Reserve(16384);
    // The walks' copies: their pages made present now, so that a thread's copy faults none.
    // (4 MiB each by default: 64 walks of 64 KiB per writer poll; past it they are finished on
    // their threads.)
    const size_t words = options_.walk_copy_bytes / sizeof(uint64_t);
    walk_copy_.reset(new uint64_t[words]);
    walk_copy_spare_.reset(new uint64_t[words]);
    std::memset(walk_copy_.get(), 0, words * sizeof(uint64_t));
    std::memset(walk_copy_spare_.get(), 0, words * sizeof(uint64_t));
  }
  if (options_.max_depth > kMaxDepthLimit) options_.max_depth = kMaxDepthLimit;
  if (options_.max_depth < 1) options_.max_depth = 1;
  if (options_.skip_frames < 0) options_.skip_frames = 0;
  for (const ModuleInfo& m : LoadedModules()) {
    bool trim = options_.trim_own_module &&
                reinterpret_cast<uint64_t>(&UnwindNativeTrimmed) - m.start < m.end - m.start;
    for (const std::string& part : options_.trim_modules)
      if (!part.empty() && m.path.find(part) != std::string::npos) trim = true;
    // 16: the walk tests every range per trimmed frame; a handful is plenty.
    if (trim && trim_.size() < 16) trim_.push_back(CodeRange{m.start, m.end});
  }
  // Resolve the interpreter now rather than inside the first launch callback.
  if (options_.mode == StackMode::kPython || options_.mode == StackMode::kMixed ||
      options_.mode == StackMode::kFull)
    PythonFrames::Get().Reload();
}

StackCollector::~StackCollector() = default;

// Not inlined into callers, so that "skip one frame" below always means
// "CaptureStack itself".
TS_HOT [[gnu::noinline]] uint32_t StackCollector::CaptureStack(StackTiming* timing,
                                                               const CallerFrame* from) {
  const StackMode mode = options_.mode;
  if (mode == StackMode::kNone) return 0;
  const int max_depth = options_.max_depth;
  uint64_t pcs[kMaxDepthLimit];
  int n_native = 0;
  uint64_t t0 = timing ? CpuTicks() : 0;
  const uint64_t first0 = timing ? t_first_time_ticks : 0;  // (a TLS read: timed calls only)
  // The thread's walk memo, held until the id is known (walk_memo.h).
  struct Held {
    WalkMemo* memo;
    ~Held() { MemoRelease(memo); }
  } held{mode != StackMode::kPython ? MemoAcquire() : nullptr};
  PyFrameRef py[kMaxDepthLimit];
  int n_py = 0;
  PythonFrames& python = PythonFrames::Get();
  uintptr_t py_top = 0, py_entry = 0;
  if (mode != StackMode::kNative) py_top = python.Top();
  const uint64_t t_top = timing ? CpuTicks() : 0;
  const uint64_t first_top = timing ? t_first_time_ticks : 0;
  // In mixed mode, under Python, the native walk ends at the innermost
  // eval-loop frame: the Python frames stand for the interpreter's own
  // native frames above it. The interpreter's layout is read only once Top()
  // has seen it published: another thread may be filling it in (Reload).
  const CodeRange eval = py_top ? python.eval_range() : CodeRange{0, 0};
  const CodeRange* stop =
      mode == StackMode::kMixed && py_top && eval.end != eval.start ? &eval : nullptr;
  MemoEntry* whole = nullptr;
  // A new return address on the way (its rule not known yet) ends the walk there when interning
  // is deferred: the rest is unwound on the writer, from a copy of the stack (DeferWalk).
  ColdStop cold;
  ColdStop* const cold_at =
      options_.defer_interning && options_.walk_copy_bytes >= sizeof(uint64_t) ? &cold : nullptr;
  if (mode != StackMode::kPython)
    n_native = UnwindNativeTrimmedMemo(held.memo, &whole, pcs, max_depth, options_.skip_frames + 1,
                                       trim_.data(), int(trim_.size()), from, stop, cold_at);
  uint64_t t1 = timing ? CpuTicks() : 0;
  const uint64_t first1 = timing ? t_first_time_ticks : 0;
  if (py_top) {
    n_py = python.WalkFrom(py_top, py, max_depth, &py_entry);
    if (n_py == 0 && stop) {  // (a frame without code): the native frames after all
      stop = nullptr;
      cold.stopped = false;
      n_native =
          UnwindNativeTrimmedMemo(held.memo, &whole, pcs, max_depth, options_.skip_frames + 1,
                                  trim_.data(), int(trim_.size()), from, nullptr, cold_at);
    }
  }
  if (timing) {
    const uint64_t t2 = CpuTicks(), first2 = t_first_time_ticks;
    if (timing->rewalk)
      timing->rewalk_ticks = Rewalk(held.memo, mode, max_depth, options_.skip_frames + 1,
                                    trim_.data(), int(trim_.size()), from);
    // Each less its first-time work (the memo's mapping, rules computed for
    // new return addresses).
    timing->unwind_ticks = t1 - t_top - (first1 - first_top);
    timing->python_ticks = (t_top - t0 - (first_top - first0)) + (t2 - t1 - (first2 - first1));
    timing->native_frames = n_native;
    timing->python_frames = n_py;
    if (whole) timing->last_cfa = whole->n > 0 ? whole->steps[whole->n - 1].cfa : whole->cfa;
  }

  if (cold.stopped) {
    if (const uint32_t id = DeferWalk(pcs, n_native, py, n_py, cold, stop, py_entry)) return id;
    // No room for the copy: the walk is finished here (the rule that stopped it is computed
    // now, as any return address a walk claimed before the writer came to it).
    n_native = UnwindNativeTrimmedMemo(held.memo, &whole, pcs, max_depth, options_.skip_frames + 1,
                                       trim_.data(), int(trim_.size()), from, stop, nullptr);
  }

  // The native frames are those of a memo entry replayed whole: the id it
  // was given with the same Python frames is this stack's id.
  uint64_t py1 = 0, py2 = 0;
  if (whole) {
    HashPythonFrames(py, n_py, py_top && python.knows_eval_frame(), &py1, &py2);
    const MemoId& m = MemoIdSlot(held.memo, whole, py1);
    if (m.owner == serial_ && m.entry == whole->serial && m.py1 == py1 && m.py2 == py2)
      return Settled(m.id);
  }

  const uint64_t* keys = pcs;
  int n = n_native;
  uint64_t merged[2 * kMaxDepthLimit];
  if (n_py > 0) {
    n = MergeKeys(python, pcs, n_native, py, n_py, max_depth, merged);
    keys = merged;
  }
  if (n == 0) return 0;
  uint64_t h1, h2;
  HashKeys(keys, n, &h1, &h2);
  // The top bits: the shared table indexes by the low ones.
  RecentStack& last = t_recent[h1 >> (64 - kRecentBits)];
  if (last.h1 == h1 && last.h2 == h2 && last.collector == serial_) {
    if (whole) RememberId(held.memo, whole, serial_, py1, py2, last.id);
    return Settled(last.id);
  }

  uint32_t id = 0;
  for (int i = 0; i < kMaxProbes; ++i) {
    const Slot& s = table_[(h1 + i) & kTableMask];
    uint64_t sh = s.hash.load(std::memory_order_acquire);
    if (sh == h1) {
      if (s.hash2.load(std::memory_order_relaxed) == h2) {
        id = s.id.load(std::memory_order_relaxed);
        break;
      }
    } else if (sh == 0) {
      break;
    }
  }
  if (!id && options_.defer_interning) id = Defer(keys, n, h1, h2);
  if (!id) id = SlowPath(keys, n, h1, h2);
  last = RecentStack{serial_, h1, h2, id};
  if (whole) RememberId(held.memo, whole, serial_, py1, py2, id);
  return Settled(id);
}

uint32_t StackCollector::Settled(uint32_t id) const {
  if (id < model::kProvisionalStackId || !settled_) return id;
  const uint32_t final_id =
      settled_[id - model::kProvisionalStackId].load(std::memory_order_acquire);
  return final_id ? final_id : id;
}

uint32_t StackCollector::SlowPath(const uint64_t* keys, int n, uint64_t hash, uint64_t hash2) {
  // (First-time mostly: another thread may have added it meanwhile.)
  FirstTimeWork first_time(FirstTimeKind::kIntern);
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  {
    FirstTimeWork wait(FirstTimeKind::kInternWait);
    lock.lock();
  }
  // Another thread may have added this stack since our lookup.
  if (const Slot* found = Find(hash, hash2)) return found->id.load(std::memory_order_relaxed);
  const uint32_t id = InternKeys(keys, n);
  if (Publish(hash, hash2, id)) {
    ++stats_.new_stacks;
  } else {
    // Table full: the stack is interned (its id is right) but not cached,
    // so it comes back here each time. Nothing is allocated for it.
    ++stats_.table_full;
  }
  return id;
}

uint32_t StackCollector::InternKeys(const uint64_t* keys, int n, const uint64_t* described,
                                    int n_described, const char* text, bool on_writer) {
  // Frame ids, innermost first.
  uint32_t frame_ids[2 * kMaxDepthLimit];
  int nf = 0, d = 0;
  for (int i = 0; i < n; ++i) {
    if ((keys[i] & kPythonTag) == kPythonTag && i + 1 < n) {
      if (d < n_described && int(described[2 * d] >> 32) == i) {
        const uint64_t at = described[2 * d + 1];
        const size_t offset = size_t(at >> 32), fn_len = (at >> 16) & 0xffff,
                     file_len = at & 0xffff;
        const std::string function(text + offset, fn_len), file(text + offset + fn_len, file_len);
        frame_ids[nf++] = InternPythonFrame(keys[i + 1], int32_t(uint32_t(keys[i])), &function,
                                            &file, uint32_t(described[2 * d]));
        ++d;
      } else {
        frame_ids[nf++] = InternPythonFrame(keys[i + 1], int32_t(uint32_t(keys[i])), nullptr,
                                            nullptr, 0, on_writer);
      }
      ++i;
    } else {
      frame_ids[nf++] = InternNativeFrame(keys[i]);
    }
  }
  // Call-site tree, outermost first, so callers share nodes.
  uint32_t parent = 0;
  for (int i = nf - 1; i >= 0; --i) {
    auto [value, inserted] = nodes_.Emplace(uint64_t{parent} << 32 | frame_ids[i], 0);
    if (inserted) {
      model::StackNode node{frame_ids[i], parent};
      nodes_by_id_.push_back(node);
      pending_nodes_.push_back(node);
      *value = uint32_t(nodes_by_id_.size());
      ++stats_.nodes;
    }
    parent = *value;
  }
  return parent;
}

uint32_t StackCollector::InternNativeFrame(uint64_t pc) {
  auto [value, inserted] = native_frames_.Emplace(pc, 0);
  if (!inserted) return *value;
  model::Frame row{};
  row.kind = model::kFrameNative;
  // pc is a return address: the call that produced it ends at pc - 1, which
  // is inside the caller even when the call is the module's last byte.
  if (ModuleInfo* m = modules_->Find(pc - 1)) {
    if (m->mapping_id == 0) {
      m->mapping_id = next_mapping_id_++;
      PendingMapping pm;
      pm.row.mapping_id = m->mapping_id;
      pm.row.start = m->start;
      pm.row.end = m->end;
      pm.row.file_offset = 0;
      pm.row.pid = uint32_t(getpid());
      pm.path = m->path;
      pm.build_id = m->build_id;
      pending_mappings_.push_back(std::move(pm));
      ++stats_.mappings;
    }
    row.mapping_id = m->mapping_id;
    row.rel_pc = pc - m->bias;
  } else {
    row.rel_pc = pc;
    ++stats_.unknown_module;
  }
  frames_.push_back(row);
  pending_frames_.push_back(PendingFrame{row, {}, {}});
  ++stats_.frames;
  *value = uint32_t(frames_.size());
  return *value;
}

uint32_t StackCollector::InternPythonFrame(uint64_t code, int32_t offset,
                                           const std::string* given_function,
                                           const std::string* given_file, uint32_t given_line,
                                           bool on_writer) {
  auto [it, inserted] = python_keys_.emplace(std::make_pair(code, offset), 0);
  if (!inserted) return it->second;
  std::string function, file;
  uint32_t line = 0;
  if (given_function) {
    function = *given_function;
    file = *given_file;
    line = given_line;
    ++stats_.python_frames_from_text;
  } else if (on_writer && !PythonFrames::Get().Initialized()) {
    // A pinned code object after the interpreter's finalization began (the capture's last
    // drain at exit): its name and file strings may be freed.
    function = "<Python frame: described after the interpreter exited>";
    ++stats_.python_frames_after_exit;
  } else {
    PyFrameRef ref;
    ref.code = code;
    ref.offset = offset;
    FirstTimeWork describe(FirstTimeKind::kDescribe);
    PythonFrames::Get().Describe(ref, &function, &file, &line);
  }
  // Several instructions map to one line: frames are deduplicated by content.
  std::string content = function + '\0' + file + '\0' + std::to_string(line);
  auto [cit, cinserted] = python_frames_.emplace(std::move(content), 0);
  if (cinserted) {
    model::Frame row{};
    row.kind = model::kFramePython;
    row.line = line;
    frames_.push_back(row);
    cit->second = uint32_t(frames_.size());
    python_strings_[cit->second] = {function, file};
    pending_frames_.push_back(PendingFrame{row, std::move(function), std::move(file)});
    ++stats_.frames;
  }
  it->second = cit->second;
  return it->second;
}

std::vector<model::Frame> StackCollector::FramesOf(uint32_t stack_id) {
  if (Settled(stack_id) >= model::kProvisionalStackId) ResolveDeferred();
  stack_id = Settled(stack_id);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<model::Frame> out;
  while (stack_id != 0 && stack_id <= nodes_by_id_.size()) {
    const model::StackNode& n = nodes_by_id_[stack_id - 1];
    out.push_back(frames_[n.frame_id - 1]);
    if (n.parent_id >= stack_id) break;
    stack_id = n.parent_id;
  }
  return out;
}

std::vector<uint32_t> StackCollector::FrameIdsOf(uint32_t stack_id) {
  if (Settled(stack_id) >= model::kProvisionalStackId) ResolveDeferred();
  stack_id = Settled(stack_id);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> out;
  while (stack_id != 0 && stack_id <= nodes_by_id_.size()) {
    const model::StackNode& n = nodes_by_id_[stack_id - 1];
    out.push_back(n.frame_id);
    if (n.parent_id >= stack_id) break;
    stack_id = n.parent_id;
  }
  return out;
}

std::pair<std::string, std::string> StackCollector::PythonFrameStrings(uint32_t frame_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = python_strings_.find(frame_id);
  return it == python_strings_.end() ? std::pair<std::string, std::string>() : it->second;
}

StackCollectorStats StackCollector::stats() {
  StackCollectorStats out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out = stats_;
  }
  std::lock_guard<std::mutex> lock(defer_mu_);
  out.deferred = deferred_count_;
  out.pinned_code_objects = pinned_.size();
  out.described_without_gil = described_without_gil_;
  out.resolved_on_append = resolved_on_append_.load(std::memory_order_relaxed);
  out.walks_deferred = walks_deferred_;
  out.walks_finished_on_thread = walks_finished_on_thread_.load(std::memory_order_relaxed);
  out.walks_cut = walks_cut_.load(std::memory_order_relaxed);
  out.walk_bytes_read_max = walk_bytes_read_max_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace tracesmith::stacks
