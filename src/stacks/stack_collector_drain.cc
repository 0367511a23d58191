#include "stack_collector_internal.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::stacks {

void StackCollector::Drain(format::SbtWriter* writer) {
  std::vector<PendingMapping> mappings;
  std::vector<PendingFrame> frames;
  std::vector<model::StackNode> nodes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mappings.swap(pending_mappings_);
    frames.swap(pending_frames_);
    nodes.swap(pending_nodes_);
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

}  // namespace tracesmith::stacks
