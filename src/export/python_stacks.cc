#include "python_stacks.h"

#include <algorithm>

#include "tracesmith/base/status.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::exporter {

using namespace model;

const std::vector<uint32_t>& PythonFunctionSlices::FramesOf(uint32_t stack_id) {
  auto [it, added] = frames_.try_emplace(stack_id);
  if (!added) return it->second;
  const auto& table = meta_->Rows<Frame>();
  std::vector<uint32_t> all = StackFrames(*meta_, stack_id);  // leaf first
  std::erase_if(all, [&](uint32_t id) { return id == 0 || id > table.size(); });
  const bool python = std::any_of(all.begin(), all.end(),
                                  [&](uint32_t id) { return table[id - 1].kind == kFramePython; });
  for (auto f = all.rbegin(); f != all.rend(); ++f)
    if (!python || table[*f - 1].kind == kFramePython) it->second.push_back(*f);
  return it->second;
}

// torch's names: "path/file.py(123): function"; a native frame without a
// file: its function, or module+offset before symbolization.
const std::string& PythonFunctionSlices::NameOf(uint32_t frame_id) {
  auto [it, added] = names_.try_emplace(frame_id);
  if (!added) return it->second;
  const Frame& f = meta_->Rows<Frame>()[frame_id - 1];
  std::string function(meta_->strings.Get(f.function_id));
  if (function.empty()) function = StrFormat("0x%llx", static_cast<unsigned long long>(f.rel_pc));
  it->second = f.file_id
                   ? StrFormat("%s(%u): %s", std::string(meta_->strings.Get(f.file_id)).c_str(),
                               f.line, function.c_str())
                   : function;
  return it->second;
}

// Frames of one function (of one file) at different lines are one function:
// consecutive calls from different lines of a function stay under its slice.
uint64_t PythonFunctionSlices::FunctionOf(uint32_t frame_id) const {
  const Frame& f = meta_->Rows<Frame>()[frame_id - 1];
  if (f.function_id == 0) return (uint64_t{1} << 63) | frame_id;  // unsymbolized: by address
  return (uint64_t{f.file_id} << 32) | f.function_id;
}

void PythonFunctionSlices::Close(Thread* t, size_t keep, const Emit& emit) {
  while (t->open.size() > keep) {
    const Open& o = t->open.back();
    const uint64_t parent = t->open.size() > 1 ? t->open[t->open.size() - 2].id : 0;
    emit({NameOf(o.frame), t->pid, t->tid, o.start_ns, o.end_ns, o.id, parent, t->number});
    t->open.pop_back();
  }
}

void PythonFunctionSlices::OnCall(uint32_t pid, uint32_t tid, uint32_t stack_id, uint64_t start_ns,
                                  uint64_t end_ns, const Emit& emit) {
  if (stack_id == 0) return;
  const uint64_t key = (uint64_t{pid} << 32) | tid;
  auto [it, added] = threads_.try_emplace(key);
  Thread& t = it->second;
  if (added) {
    t.pid = pid, t.tid = tid, t.number = static_cast<uint32_t>(thread_order_.size());
    thread_order_.push_back(key);
  }
  const std::vector<uint32_t>& frames = FramesOf(stack_id);
  size_t common = 0;
  while (common < frames.size() && common < t.open.size() &&
         t.open[common].function == FunctionOf(frames[common]))
    ++common;
  Close(&t, common, emit);
  end_ns = std::max(start_ns, end_ns);
  const auto& table = meta_->Rows<Frame>();
  for (size_t i = 0; i < t.open.size(); ++i) {
    Open& o = t.open[i];
    o.end_ns = std::max(o.end_ns, end_ns);
    if (table[frames[i] - 1].line < table[o.frame - 1].line) o.frame = frames[i];
  }
  for (size_t i = common; i < frames.size(); ++i)
    t.open.push_back({frames[i], FunctionOf(frames[i]), start_ns, end_ns, next_id_++});
}

void PythonFunctionSlices::Finish(const Emit& emit) {
  for (uint64_t key : thread_order_) Close(&threads_[key], 0, emit);
}

}  // namespace tracesmith::exporter
