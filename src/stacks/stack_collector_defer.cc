// StackCollector's deferred interning (stack_collector.h): a new stack's
// provisional id and queued keys on the program's thread (Defer), their
// interning on the writer (ResolveDeferred), and the shared table's inserts.
#include <algorithm>
#include <mutex>
#include <string>

#include "python_frames.h"
#include "stack_collector_internal.h"
#include "tracesmith/base/first_time_cost.h"

namespace tracesmith::stacks {

// A record (deferred_): hash, hash2, provisional id << 32 | n, m, the n
// keys, then m descriptions of Python frames (those described here), two
// words each: key index << 32 | line, and text offset << 32 | function
// length << 16 | file length, the text in deferred_text_.

// A new stack, deferred: a provisional id, the keys queued for the writer
// (ResolveDeferred). 0 when it must be interned here: the table full or the
// provisional ids spent.
uint64_t StackCollector::QueueDescriptions(const uint64_t* keys, int n, bool gil,
                                           std::vector<uint64_t>* out) {
  PythonFrames& python = PythonFrames::Get();
  uint64_t m = 0;
  for (int i = 0; i + 1 < n; ++i) {
    if ((keys[i] & kPythonTag) != kPythonTag) continue;
    const uint64_t code = keys[i + 1];
    const uint32_t offset = uint32_t(keys[i]);
    const uint64_t known = offset < 0x10000 ? code | uint64_t{offset} << 48 : 0;
    if (known && !described_.Emplace(known, 1).second) {
      ++i;
      continue;
    }
    if (gil) {
      if (pinned_.Emplace(code, 1).second) python.Pin(code);
    } else {
      std::string function, file;
      uint32_t line = 0;
      {
        FirstTimeWork describe(FirstTimeKind::kDescribe);
        python.Describe(PyFrameRef{code, int32_t(offset), false}, &function, &file, &line);
      }
      function.resize(std::min<size_t>(function.size(), 0xffff));
      file.resize(std::min<size_t>(file.size(), 0xffff));
      out->push_back(uint64_t(uint32_t(i)) << 32 | line);
      out->push_back(uint64_t(deferred_text_.size()) << 32 | function.size() << 16 | file.size());
      deferred_text_ += function;
      deferred_text_ += file;
      ++m;
      ++described_without_gil_;
    }
    ++i;
  }
  return m;
}

uint32_t StackCollector::Defer(const uint64_t* keys, int n, uint64_t hash, uint64_t hash2) {
  PythonFrames& python = PythonFrames::Get();
  bool has_python = false;
  for (int i = 0; i < n && !has_python; ++i) has_python = (keys[i] & kPythonTag) == kPythonTag;
  const bool gil = has_python && python.HoldsGil();
  FirstTimeWork first_time(FirstTimeKind::kIntern);
  std::unique_lock<std::mutex> lock(defer_mu_, std::defer_lock);
  {
    FirstTimeWork wait(FirstTimeKind::kInternWait);
    lock.lock();
  }
  Slot* empty = nullptr;
  if (const Slot* found = Find(hash, hash2, &empty))
    return found->id.load(std::memory_order_relaxed);
  // (Room without a reallocation on this thread: the writer reserves deferred_ ahead; else the
  // stack is interned here.)
  if (!empty || next_provisional_ >= kMaxProvisional ||
      deferred_.size() + 4 + 3 * size_t(n) > deferred_.capacity())
    return 0;
  const uint32_t id = model::kProvisionalStackId + next_provisional_++;
  deferred_.push_back(hash);
  deferred_.push_back(hash2);
  deferred_.push_back(uint64_t{id} << 32 | uint32_t(n));
  const size_t m_at = deferred_.size();
  deferred_.push_back(0);
  deferred_.insert(deferred_.end(), keys, keys + n);
  const uint64_t m = QueueDescriptions(keys, n, gil, &deferred_);
  deferred_[m_at] = m;
  ++deferred_count_;
  Fill(empty, hash, hash2, id);
  return id;
}

void StackCollector::ResolveDeferred() {
  if (!options_.defer_interning) return;
  std::lock_guard<std::mutex> resolving(resolve_mu_);
  std::vector<uint64_t> records;
  std::string text;
  if (deferred_spare_.capacity() < kDeferredWords) deferred_spare_.reserve(kDeferredWords);
  if (deferred_text_spare_.capacity() < kDeferredText) deferred_text_spare_.reserve(kDeferredText);
  {
    std::lock_guard<std::mutex> lock(defer_mu_);
    records.swap(deferred_);
    deferred_.swap(deferred_spare_);  // (reserved: a thread's record is not a reallocation)
    text.swap(deferred_text_);
    deferred_text_.swap(deferred_text_spare_);
    walk_copy_.swap(walk_copy_spare_);  // (both present: see the constructor)
    walk_copy_used_ = 0;
    if (pinned_.size() * 2 >= pinned_.capacity()) pinned_.Reserve(pinned_.size() * 2);
    if (described_.size() * 2 >= described_.capacity()) described_.Reserve(described_.size() * 2);
  }
  for (size_t i = 0; i + 4 <= records.size();) {
    if (records[i] == 0) {  // a walk's record (a key hash is never 0)
      i += ResolveWalk(records.data() + i, walk_copy_spare_.get(), text);
      continue;
    }
    const uint64_t hash = records[i], hash2 = records[i + 1];
    const uint32_t provisional = uint32_t(records[i + 2] >> 32);
    const int n = int(uint32_t(records[i + 2]));
    const int m = int(records[i + 3]);
    uint32_t id;
    {
      // One stack per hold: a thread interning on its own waits for one at most.
      std::lock_guard<std::mutex> lock(mu_);
      id = InternKeys(records.data() + i + 4, n, records.data() + i + 4 + size_t(n), m, text.data(),
                      /*on_writer=*/true);
      ++stats_.new_stacks;
    }
    settled_[provisional - model::kProvisionalStackId].store(id, std::memory_order_release);
    if (Slot* s = Find(hash, hash2)) {  // later lookups find the final id
      uint32_t expected = provisional;
      s->id.compare_exchange_strong(expected, id, std::memory_order_relaxed);
    }
    i += 4 + size_t(n) + 2 * size_t(m);
  }
  records.clear();
  text.clear();
  // The next swap's spares: these buffers, when at least as large.
  if (records.capacity() >= deferred_spare_.capacity()) deferred_spare_.swap(records);
  if (text.capacity() >= deferred_text_spare_.capacity()) deferred_text_spare_.swap(text);
}

StackCollector::Slot* StackCollector::Find(uint64_t hash, uint64_t hash2, Slot** empty) const {
  if (empty) *empty = nullptr;
  for (int i = 0; i < kMaxProbes; ++i) {
    Slot& s = table_[(hash + i) & kTableMask];
    const uint64_t sh = s.hash.load(std::memory_order_acquire);
    if (sh == hash && s.hash2.load(std::memory_order_relaxed) == hash2) return &s;
    if (sh == 0) {
      if (empty) *empty = &s;
      return nullptr;
    }
  }
  return nullptr;
}

void StackCollector::Fill(Slot* slot, uint64_t hash, uint64_t hash2, uint32_t id) {
  slot->id.store(id, std::memory_order_relaxed);
  slot->hash2.store(hash2, std::memory_order_relaxed);
  slot->hash.store(hash, std::memory_order_release);  // publishes id and hash2
}

bool StackCollector::Publish(uint64_t hash, uint64_t hash2, uint32_t id) {
  std::lock_guard<std::mutex> lock(defer_mu_);
  Slot* empty = nullptr;
  if (Find(hash, hash2, &empty)) return true;  // (deferred meanwhile: that id stays)
  if (!empty) return false;
  Fill(empty, hash, hash2, id);
  return true;
}

}  // namespace tracesmith::stacks
