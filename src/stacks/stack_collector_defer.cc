// StackCollector's deferred interning (stack_collector.h): a new stack's
// provisional id and queued keys on the program's thread (Defer), their
// interning on the writer (ResolveDeferred), and the shared table's inserts.
#include <mutex>

#include "python_frames.h"
#include "stack_collector_internal.h"
#include "tracesmith/base/first_time_cost.h"

namespace tracesmith::stacks {

// A new stack, deferred: a provisional id, the keys queued for the writer
// (ResolveDeferred). 0 when it must be interned here: Python frames on a
// thread without the GIL (their code objects could not be kept alive), the
// table full, or the provisional ids spent.
uint32_t StackCollector::Defer(const uint64_t* keys, int n, uint64_t hash, uint64_t hash2) {
  PythonFrames& python = PythonFrames::Get();
  bool has_python = false;
  for (int i = 0; i < n && !has_python; ++i) has_python = (keys[i] & kPythonTag) == kPythonTag;
  if (has_python && !python.HoldsGil()) {
    without_gil_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  FirstTimeWork first_time(FirstTimeKind::kIntern);
  std::unique_lock<std::mutex> lock(defer_mu_, std::defer_lock);
  {
    FirstTimeWork wait(FirstTimeKind::kInternWait);
    lock.lock();
  }
  Slot* empty = nullptr;
  for (int i = 0; i < kMaxProbes; ++i) {
    Slot& s = table_[(hash + i) & kTableMask];
    const uint64_t sh = s.hash.load(std::memory_order_relaxed);
    if (sh == hash) {
      if (s.hash2.load(std::memory_order_relaxed) == hash2)
        return s.id.load(std::memory_order_relaxed);
    } else if (sh == 0) {
      empty = &s;
      break;
    }
  }
  if (!empty || next_provisional_ >= kMaxProvisional) return 0;
  // The writer describes the Python frames: each code object is kept alive
  // (this thread holds the GIL, so it may take a reference).
  for (int i = 0; i + 1 < n; ++i)
    if ((keys[i] & kPythonTag) == kPythonTag) {
      if (pinned_.Emplace(keys[i + 1], 1).second) python.Pin(keys[i + 1]);
      ++i;
    }
  const uint32_t id = model::kProvisionalStackId + next_provisional_++;
  deferred_.push_back(hash);
  deferred_.push_back(hash2);
  deferred_.push_back(uint64_t{id} << 32 | uint32_t(n));
  deferred_.insert(deferred_.end(), keys, keys + n);
  ++deferred_count_;
  empty->id.store(id, std::memory_order_relaxed);
  empty->hash2.store(hash2, std::memory_order_relaxed);
  empty->hash.store(hash, std::memory_order_release);
  return id;
}

void StackCollector::ResolveDeferred() {
  if (!options_.defer_interning) return;
  std::lock_guard<std::mutex> resolving(resolve_mu_);
  std::vector<uint64_t> records;
  if (deferred_spare_.capacity() < kDeferredWords) deferred_spare_.reserve(kDeferredWords);
  {
    std::lock_guard<std::mutex> lock(defer_mu_);
    records.swap(deferred_);
    deferred_.swap(deferred_spare_);  // (reserved: a thread's record is not a reallocation)
    if (pinned_.size() * 2 >= pinned_.capacity()) pinned_.Reserve(pinned_.size() * 2);
  }
  for (size_t i = 0; i + 3 <= records.size();) {
    const uint64_t hash = records[i], hash2 = records[i + 1];
    const uint32_t provisional = uint32_t(records[i + 2] >> 32);
    const int n = int(uint32_t(records[i + 2]));
    uint32_t id;
    {
      // One stack per hold: a thread interning on its own waits for one at most.
      std::lock_guard<std::mutex> lock(mu_);
      id = InternKeys(&records[i + 3], n);
      ++stats_.new_stacks;
    }
    settled_[provisional - model::kProvisionalStackId].store(id, std::memory_order_release);
    for (int p = 0; p < kMaxProbes; ++p) {  // later lookups find the final id
      Slot& s = table_[(hash + p) & kTableMask];
      if (s.hash.load(std::memory_order_acquire) == hash &&
          s.hash2.load(std::memory_order_relaxed) == hash2) {
        uint32_t expected = provisional;
        s.id.compare_exchange_strong(expected, id, std::memory_order_relaxed);
        break;
      }
    }
    i += 3 + size_t(n);
  }
  records.clear();
  // The next swap's spare: this buffer, when at least as large.
  if (records.capacity() >= deferred_spare_.capacity()) deferred_spare_.swap(records);
}

bool StackCollector::Publish(uint64_t hash, uint64_t hash2, uint32_t id) {
  std::lock_guard<std::mutex> lock(defer_mu_);
  for (int i = 0; i < kMaxProbes; ++i) {
    Slot& s = table_[(hash + i) & kTableMask];
    const uint64_t sh = s.hash.load(std::memory_order_relaxed);
    if (sh == hash && s.hash2.load(std::memory_order_relaxed) == hash2) return true;  // (deferred)
    if (sh == 0) {
      s.id.store(id, std::memory_order_relaxed);
      s.hash2.store(hash2, std::memory_order_relaxed);
      s.hash.store(hash, std::memory_order_release);  // publishes id and hash2
      return true;
    }
  }
  return false;
}

}  // namespace tracesmith::stacks
