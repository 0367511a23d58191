#include "stack_collector_internal.h"
#include "tracesmith/format/sbt_writer.h"

#include <algorithm>

namespace tracesmith::stacks {

void StackCollector::Drain(format::SbtWriter* writer) {
  ResolveDeferred();
  std::vector<PendingMapping> mappings;
  std::vector<PendingFrame> frames;
  std::vector<model::StackNode> nodes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mappings.swap(pending_mappings_);
    frames.swap(pending_frames_);
    nodes.swap(pending_nodes_);
    // Room for as many as this poll's, so that a callback interning a cold stack does not
    // grow them element by element (a copy at each doubling).
    pending_frames_.reserve(std::max<size_t>(frames.size(), 256));
    pending_nodes_.reserve(std::max<size_t>(nodes.size(), 256));
    GrowAhead();
  }
  for (PendingMapping& m : mappings) {
    m.row.path_id = writer->InternString(m.path);
    m.row.build_id_id = m.build_id.empty() ? 0 : writer->InternString(m.build_id);
    writer->Append(m.row);
  }
  for (PendingFrame& f : frames) {
    if (f.row.kind == model::kFramePython) {
      f.row.function_id = writer->InternString(f.function);
      f.row.file_id = writer->InternString(f.file);
    }
    writer->Append(f.row);
  }
  for (const model::StackNode& n : nodes) writer->Append(n);
}

void StackCollector::AttachWriter(format::SbtWriter* writer) {
  attached_ = writer;
  // A provisional id that this poll's Drain did not settle (a row collected after it, of a stack
  // deferred meanwhile): its stack is interned and drained now, before the row that names it.
  writer->SetStackIdResolver(
      [](void* context, uint32_t id) -> uint32_t {
        auto* self = static_cast<StackCollector*>(context);
        uint32_t final_id = self->Settled(id);
        if (final_id >= model::kProvisionalStackId) {
          self->resolved_on_append_.fetch_add(1, std::memory_order_relaxed);
          self->Drain(self->attached_);
          final_id = self->Settled(id);
        }
        return final_id >= model::kProvisionalStackId ? 0 : final_id;
      },
      this);
}

// The tables a new stack is interned into grow here, on the writer, before they are half full,
// not in the launch callback that would cross their limit (a rehash or a vector's copy of
// thousands of entries): interning took 149-183 us of one CUDA call of a PyTorch Transformer's
// before, 38-110 us after (H200, 2026-11-30). A thread that needs the lock meanwhile waits for it;
// each table grows a few times in a run.
void StackCollector::GrowAhead() {
  // Room for 16K frames and nodes before the first growth (a 40-step Transformer had ~10K):
  // ~1 MB of buckets, and vectors' pages touched as used.
  static constexpr size_t kFirstSize = size_t{1} << 15;
  auto map = [this](auto& m) {
    if (m.bucket_count() < kFirstSize ||
        m.size() * 2 >= size_t(double(m.bucket_count()) * double(m.max_load_factor()))) {
      m.reserve(std::max<size_t>(m.size() * 4, kFirstSize));
      ++stats_.tables_grown;
    }
  };
  auto vec = [this](auto& v) {
    if (v.size() * 2 >= v.capacity()) {
      v.reserve(std::max<size_t>(v.size() * 4, kFirstSize));
      ++stats_.tables_grown;
    }
  };
  auto flat = [this](FlatMapU64& m) {  // (half full: grown to a quarter, 16 bytes a slot)
    if (m.capacity() < kFirstSize || m.size() * 2 >= m.capacity()) {
      m.Reserve(std::max<size_t>(m.size() * 2, kFirstSize / 2));
      ++stats_.tables_grown;
    }
  };
  flat(native_frames_);
  map(python_frames_);
  flat(nodes_);
  map(python_strings_);
  vec(frames_);
  vec(nodes_by_id_);
}

}  // namespace tracesmith::stacks
