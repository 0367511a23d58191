#include "input_remap.h"

#include <algorithm>

namespace tracesmith::cluster::internal {

uint32_t OutputTables::FreshPid() {
  while (known_pids.contains(next_fresh_pid) || taken_pids.contains(next_fresh_pid))
    ++next_fresh_pid;
  return next_fresh_pid++;
}

InputRemap::InputRemap(OutputTables* out, model::StringTable* strings, size_t input_index)
    : out_(out), strings_out_(strings), input_(input_index) {}

uint32_t InputRemap::Pid(uint32_t pid) {
  auto it = pids_.find(pid);
  if (it != pids_.end()) return it->second;
  uint32_t out = pid;
  auto taken = out_->taken_pids.find(pid);
  if (taken != out_->taken_pids.end()) {
    out = out_->FreshPid();
    renumbered_.push_back(Renumbered{pid, out, taken->second});
  }
  out_->taken_pids.emplace(out, input_);
  pids_.emplace(pid, out);
  return out;
}

uint64_t InputRemap::Map(IdSpace space, uint64_t v) {
  switch (space) {
    case IdSpace::kString:
      return String(static_cast<uint32_t>(v));
    case IdSpace::kStackNode:
      return Position(v, nodes_);
    case IdSpace::kFrame:
      return Position(v, frames_);
    case IdSpace::kMapping:
      return Mapping(static_cast<uint32_t>(v));
    case IdSpace::kFlow:
      return Flow(v);
    case IdSpace::kPid:
      return Pid(static_cast<uint32_t>(v));
    case IdSpace::kValue:
    case IdSpace::kPerProcess:
      break;
  }
  return v;
}

void InputRemap::SetSource(const model::Trace* batch) {
  in_ = batch;
  // A string several inputs share is stored once.
  for (; strings_seen_ < in_->strings.size(); ++strings_seen_)
    if (in_->strings.Has(strings_seen_)) String(strings_seen_);
  while (frames_.size() < in_->Rows<model::Frame>().size()) frames_.push_back(++out_->frames);
  while (nodes_.size() < in_->Rows<model::StackNode>().size()) nodes_.push_back(++out_->nodes);
}

uint32_t InputRemap::String(uint32_t id) {
  if (id < strings_.size() && strings_[id] != 0) return strings_[id] - 1;
  if (!in_->strings.Has(id)) return 0;  // a gap left by a damaged chunk reads as ""
  if (id >= strings_.size()) strings_.resize(std::max<size_t>(id + 1, in_->strings.size()), 0);
  const uint32_t out = strings_out_->Intern(in_->strings.Get(id));
  strings_[id] = out + 1;
  return out;
}

uint32_t InputRemap::Position(uint64_t id, const std::vector<uint32_t>& ids) {
  // The writer puts tables before the rows that use them, so a reference
  // past what was read points into a part of the input that was lost.
  if (id > ids.size()) {
    ++dangling_;
    return 0;
  }
  return ids[id - 1];
}

uint32_t InputRemap::Mapping(uint32_t id) {
  // Numbered on first sight (a Mapping row or a frame pointing to it), in
  // the order the input names them: dense, like a capture's.
  auto [it, inserted] = mappings_.try_emplace(id, 0);
  if (inserted) it->second = ++out_->mappings;
  return it->second;
}

uint64_t InputRemap::Flow(uint64_t id) {
  // Numbered on first sight, as mappings: inputs read in turn interleave
  // their flows, and an input's ids need no block of their own. The ids
  // are in NvtxRangeEvent rows only, which every pass that decodes them
  // reads in one order: each pass numbers them alike.
  auto it = flows_.find(id);
  if (it != flows_.end()) return it->second;
  if (out_->flows >= UINT32_MAX) {  // would not fit the field: no flow rather than a wrong one
    ++flow_overflow_;
    return 0;
  }
  const uint32_t out = static_cast<uint32_t>(++out_->flows);
  flows_.emplace(id, out);
  return out;
}

}  // namespace tracesmith::cluster::internal
