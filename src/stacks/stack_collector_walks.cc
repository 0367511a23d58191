// StackCollector's deferred walks (stack_collector.h): a walk that meets a
// return address without an unwind rule (first sighting) stops there
// (walk_memo.h's ColdStop); the thread copies its stack from that frame up and
// queues it with the frames so far (DeferWalk), and the writer finishes the
// walk on the copy, computing the rules, then merges, hashes and interns the
// stack as a deferred one (ResolveWalk). What stays on the thread for a new
// stack: the copy (tens of KiB) instead of one rule per new return address
// (~1.6 us each on an H200's VM; a cold PyTorch stack brings dozens at once).
#include <algorithm>
#include <mutex>
#include <string>

#include "python_frames.h"
#include "stack_collector_internal.h"
#include "stack_hash.h"
#include "tracesmith/base/first_time_cost.h"
#include "walk_memo.h"

namespace tracesmith::stacks {

// A walk's record in deferred_ (after the key records' format, stack_collector_defer.cc):
//   0 (a key record starts with its hash, never 0),
//   provisional id << 32 | n native frames, n Python frames << 32 | m descriptions,
//   the thread's stack end << 1 | kHasStop, stop.start, stop.end, the ColdStop's rsp, rbp and key,
//   the copy's first word in the copy buffer << 32 | its words,
//   the n native frames, the Python frames (2 words each: kPythonTag | offset | ends_segment
//   << 32, code), the m descriptions (QueueDescriptions': word index in the Python frames).
namespace {
constexpr size_t kWalkHeader = 10;
constexpr uint64_t kHasStop = 1;
constexpr uint64_t kEndsSegment = uint64_t{1} << 32;
}  // namespace

uint32_t StackCollector::DeferWalk(const uint64_t* pcs, int n_native, const PyFrameRef* py,
                                   int n_py, const ColdStop& cold, const CodeRange* stop,
                                   uintptr_t py_entry) {
  // The stack to copy: from the walk's state up, checked readable first where the thread's walks
  // have not read yet (as the walk would on the thread). A walk under Python ends at the
  // innermost eval-loop frame: it reads nothing above that activation's entry frame (a local of
  // the _PyEval_EvalFrameDefault call; 1 KiB more is copied), usually a few KiB up; where that
  // frame is not known (Python 3.11), 64 KiB, a walk that needed more counted (walks_cut). A
  // native walk goes to the thread's outermost frame: its whole used stack, up to glibc's top
  // (the thread's static TLS lies below the top: hundreds of KiB in some programs), or, past 128
  // KiB, the walk is finished here (the deepest walk read 76 KiB under PyTorch).
  const bool entry_known =
      stop && py_entry > cold.rsp && py_entry - cold.rsp < kWalkCopyNativeBytes;
  const uint64_t want = !stop         ? UINT64_MAX
                        : entry_known ? py_entry + 1024
                                      : cold.rsp + kWalkCopyMixedBytes;
  const uint64_t end = GrowCheckedStack(want);
  const uint64_t bytes = end > cold.rsp ? (std::min(end, want) - cold.rsp) & ~uint64_t{7} : 0;
  if (bytes == 0 || bytes > kWalkCopyNativeBytes + 1024) {
    walks_finished_on_thread_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint64_t stack_end = StackEnd();
  const size_t words = size_t(bytes / 8);

  const bool gil = n_py > 0 && PythonFrames::Get().HoldsGil();
  FirstTimeWork first_time(FirstTimeKind::kCopy);
  std::unique_lock<std::mutex> lock(defer_mu_, std::defer_lock);
  {
    FirstTimeWork wait(FirstTimeKind::kInternWait);
    lock.lock();
  }
  // Room without a reallocation here (the writer reserves deferred_ ahead), a provisional id.
  const size_t record = kWalkHeader + size_t(n_native) + 4 * size_t(n_py);
  if (walk_copy_used_ + words > options_.walk_copy_bytes / sizeof(uint64_t) ||
      deferred_.size() + record > deferred_.capacity() || next_provisional_ >= kMaxProvisional) {
    walks_finished_on_thread_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const uint32_t id = model::kProvisionalStackId + next_provisional_++;
  const size_t copy_at = walk_copy_used_;
  CopyStackBytes(reinterpret_cast<uint8_t*>(walk_copy_.get() + copy_at), cold.rsp, words * 8);
  walk_copy_used_ += words;
  deferred_.push_back(0);
  deferred_.push_back(uint64_t{id} << 32 | uint32_t(n_native));
  const size_t counts_at = deferred_.size();
  deferred_.push_back(uint64_t(uint32_t(n_py)) << 32);
  deferred_.push_back(stack_end << 1 | (stop ? kHasStop : 0));
  deferred_.push_back(stop ? stop->start : 0);
  deferred_.push_back(stop ? stop->end : 0);
  deferred_.push_back(cold.rsp);
  deferred_.push_back(cold.rbp);
  deferred_.push_back(cold.key);
  deferred_.push_back(uint64_t(copy_at) << 32 | words);
  deferred_.insert(deferred_.end(), pcs, pcs + n_native);
  const size_t py_at = deferred_.size();
  for (int j = 0; j < n_py; ++j) {
    deferred_.push_back(kPythonTag | uint32_t(py[j].offset) |
                        (py[j].ends_segment ? kEndsSegment : 0));
    deferred_.push_back(py[j].code);
  }
  // (The capacity was checked: deferred_ is not reallocated while its keys are read.)
  deferred_[counts_at] |= QueueDescriptions(deferred_.data() + py_at, 2 * n_py, gil, &deferred_);
  ++deferred_count_;
  ++walks_deferred_;
  return id;
}

size_t StackCollector::ResolveWalk(const uint64_t* r, const uint64_t* copies,
                                   const std::string& text) {
  const uint32_t provisional = uint32_t(r[1] >> 32);
  const int n_native = int(uint32_t(r[1]));
  const int n_py = int(r[2] >> 32), m = int(uint32_t(r[2]));
  const uint64_t flags = r[3];
  const CodeRange stop{r[4], r[5]};
  ColdStop cold;
  cold.rsp = r[6];
  cold.rbp = r[7];
  cold.key = r[8];
  const uint64_t* copy = copies + (r[9] >> 32);
  const size_t words = size_t(uint32_t(r[9]));
  const uint64_t* native = r + kWalkHeader;
  const uint64_t* py_keys = native + n_native;
  const uint64_t* described = py_keys + 2 * n_py;
  const size_t taken = kWalkHeader + size_t(n_native) + 2 * size_t(n_py) + 2 * size_t(m);

  // The walk, finished.
  const int max_depth = options_.max_depth;
  uint64_t pcs[kMaxDepthLimit];
  std::copy(native, native + n_native, pcs);
  CopyWalkUse use;
  const int n_pcs = n_native + ContinueWalkOnCopy(cold, copy, words, flags >> 1, pcs + n_native,
                                                  max_depth - n_native,
                                                  (flags & kHasStop) ? &stop : nullptr, &use);
  if (use.past_copy) walks_cut_.fetch_add(1, std::memory_order_relaxed);
  if (use.bytes_read > walk_bytes_read_max_.load(std::memory_order_relaxed))
    walk_bytes_read_max_.store(use.bytes_read, std::memory_order_relaxed);  // (writer only)

  // Merged with its Python frames as CaptureStack merges them; the descriptions' indexes moved
  // from the Python frames to the merged keys (those left out past max_depth dropped).
  PyFrameRef py[kMaxDepthLimit];
  for (int j = 0; j < n_py; ++j)
    py[j] = PyFrameRef{py_keys[2 * j + 1], int32_t(uint32_t(py_keys[2 * j])),
                       (py_keys[2 * j] & kEndsSegment) != 0};
  uint64_t merged[2 * kMaxDepthLimit];
  int py_at[kMaxDepthLimit];
  const uint64_t* keys = pcs;
  int n = n_pcs;
  if (n_py > 0) {
    n = MergeKeys(PythonFrames::Get(), pcs, n_pcs, py, n_py, max_depth, merged, py_at);
    keys = merged;
  }
  uint64_t moved[4 * kMaxDepthLimit];
  int n_moved = 0;
  for (int d = 0; d < m; ++d) {
    const int j = int(described[2 * d] >> 32) / 2;
    const int at = py_at[j];
    if (at < 0) {
      // Left out of this stack, but its description is the only one (QueueDescriptions marked
      // it described, and its code object may be gone): interned now, as later stacks name it.
      const uint64_t w = described[2 * d + 1];
      const size_t offset = size_t(w >> 32), fn_len = (w >> 16) & 0xffff, file_len = w & 0xffff;
      const std::string function(text.data() + offset, fn_len);
      const std::string file(text.data() + offset + fn_len, file_len);
      std::lock_guard<std::mutex> lock(mu_);
      (void)InternPythonFrame(py[j].code, py[j].offset, &function, &file,
                              uint32_t(described[2 * d]));
      continue;
    }
    moved[2 * n_moved] = uint64_t(uint32_t(at)) << 32 | uint32_t(described[2 * d]);
    moved[2 * n_moved + 1] = described[2 * d + 1];
    ++n_moved;
  }

  uint64_t h1, h2;
  HashKeys(keys, n, &h1, &h2);
  uint32_t id = 0;
  if (const Slot* s = Find(h1, h2)) id = Settled(s->id.load(std::memory_order_relaxed));
  if (!id || id >= model::kProvisionalStackId) {
    std::lock_guard<std::mutex> lock(mu_);
    id = InternKeys(keys, n, moved, n_moved, text.data(), /*on_writer=*/true);
    ++stats_.new_stacks;
  }
  (void)Publish(h1, h2, id);  // later walks of this stack find it (full: they intern it)
  settled_[provisional - model::kProvisionalStackId].store(id, std::memory_order_release);
  return taken;
}

}  // namespace tracesmith::stacks
