#include "python_stacks.h"

#include <algorithm>
#include <iterator>

#include "tracesmith/base/status.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::exporter {

using namespace model;

namespace {

constexpr std::string_view kOptimizerHook = "Optimizer.profile_hook_step.<locals>.wrapper";

// Overloads spelled in lower case (the upper-case ones are cut at "_X"),
// longer ones first; taken off one after another (arange_start_out).
constexpr std::string_view kLowerOverloads[] = {
    "_dtype_layout", "_memory_format", "_start_step", "_start", "_dtype", "_device",
    "_other",        "_int",           "_dim",        "_out",   "_self",  "_low"};
// Operators whose own name has an upper-case part (aten::_cast_Int).
constexpr std::string_view kUpperCaseOps = "_cast_";

}  // namespace

std::string TorchOpName(std::string_view fn) {
  constexpr std::string_view kOps = "at::_ops::", kNodes = "torch::autograd::generated::";
  if (fn.starts_with(kOps)) {
    fn.remove_prefix(kOps.size());
    const size_t end = fn.find("::");
    if (end == std::string_view::npos || end == 0 || fn.substr(end).rfind("::call(", 0) != 0)
      return "";
    std::string_view op = fn.substr(0, end);
    const size_t from = op.starts_with(kUpperCaseOps) ? kUpperCaseOps.size() + 1 : 1;
    for (size_t i = from; i + 1 < op.size(); ++i)
      if (op[i] == '_' && op[i + 1] >= 'A' && op[i + 1] <= 'Z') {
        op = op.substr(0, i);
        break;
      }
    // An in-place operator's overload: `random_` + `from` = random__from.
    if (!op.starts_with("__"))
      if (const size_t d = op.find("__", 1); d != std::string_view::npos) op = op.substr(0, d + 1);
    for (bool cut = true; cut;) {
      cut = false;
      for (std::string_view o : kLowerOverloads)
        if (op.size() > o.size() && op.ends_with(o)) {
          op.remove_suffix(o.size());
          cut = true;
          break;
        }
    }
    return "aten::" + std::string(op);
  }
  std::string_view node;
  if (fn.starts_with(kNodes)) {
    fn.remove_prefix(kNodes.size());
    const size_t end = fn.find("::apply(");
    if (end == std::string_view::npos || end == 0 || fn.substr(0, end).find(':') != fn.npos)
      return "";
    node = fn.substr(0, end);
  } else if (fn.starts_with("torch::autograd::AccumulateGrad::apply(")) {
    node = "torch::autograd::AccumulateGrad";
  } else {
    return "";
  }
  return "autograd::engine::evaluate_function: " + std::string(node);
}

bool PythonFunctionSlices::HasPythonFrames(const model::Trace& meta) {
  const auto& frames = meta.Rows<Frame>();
  return std::any_of(frames.begin(), frames.end(),
                     [](const Frame& f) { return f.kind == kFramePython; });
}

const std::vector<PythonFunctionSlices::Kept>& PythonFunctionSlices::FramesOf(uint32_t stack_id) {
  auto [it, added] = frames_.try_emplace(stack_id);
  if (!added) return it->second;
  const auto& table = meta_->Rows<Frame>();
  std::vector<uint32_t> all = StackFrames(*meta_, stack_id);  // leaf first
  std::erase_if(all, [&](uint32_t id) { return id == 0 || id > table.size(); });
  if (mode_ == Frames::kTorchOps) {
    uint64_t path = 0x9e3779b97f4a7c15ull;  // the stack from the root, hashed
    for (auto f = all.rbegin(); f != all.rend(); ++f) {
      path = (path ^ *f) * 0x100000001b3ull;
      path ^= path >> 29;
      if (table[*f - 1].kind != kFramePython) {
        if (!NameOf(*f).empty()) it->second.push_back({*f, path});
        continue;
      }
      // torch.optim's step hook: record_function "Optimizer.step#<Class>.step"
      // around the step, named by the first "<Class>.step" frame below it.
      if (meta_->strings.Get(table[*f - 1].function_id) != kOptimizerHook) continue;
      for (auto g = std::next(f); g != all.rend(); ++g) {
        const std::string_view fn = meta_->strings.Get(table[*g - 1].function_id);
        if (table[*g - 1].kind != kFramePython || !fn.ends_with(".step")) continue;
        names_[*g] = "Optimizer.step#" + std::string(fn);
        it->second.push_back({*g, path});
        break;
      }
    }
    return it->second;
  }
  for (auto f = all.rbegin(); f != all.rend(); ++f)
    if (!python_program_ || table[*f - 1].kind == kFramePython)
      it->second.push_back({*f, FunctionOf(*f)});
  return it->second;
}

// torch's names: "path/file.py(123): function"; a native frame without a
// file: its function, or module+offset before symbolization. kTorchOps: the
// operator's name ("" for a frame of no operator).
const std::string& PythonFunctionSlices::NameOf(uint32_t frame_id) {
  auto [it, added] = names_.try_emplace(frame_id);
  if (!added) return it->second;
  const Frame& f = meta_->Rows<Frame>()[frame_id - 1];
  std::string function(meta_->strings.Get(f.function_id));
  if (mode_ == Frames::kTorchOps) return it->second = TorchOpName(function);
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
  const std::vector<Kept>& frames = FramesOf(stack_id);
  size_t common = 0;
  while (common < frames.size() && common < t.open.size() &&
         t.open[common].function == frames[common].function)
    ++common;
  Close(&t, common, emit);
  end_ns = std::max(start_ns, end_ns);
  const auto& table = meta_->Rows<Frame>();
  for (size_t i = 0; i < t.open.size(); ++i) {
    Open& o = t.open[i];
    o.end_ns = std::max(o.end_ns, end_ns);
    if (table[frames[i].frame - 1].line < table[o.frame - 1].line) o.frame = frames[i].frame;
  }
  for (size_t i = common; i < frames.size(); ++i)
    t.open.push_back({frames[i].frame, frames[i].function, start_ns, end_ns, next_id_++});
}

uint64_t PythonFunctionSlices::OpenSlice(uint32_t pid, uint32_t tid, std::string_view prefix,
                                         std::string_view* name) {
  auto it = threads_.find((uint64_t{pid} << 32) | tid);
  if (it == threads_.end()) return 0;
  for (auto o = it->second.open.rbegin(); o != it->second.open.rend(); ++o)
    if (NameOf(o->frame).starts_with(prefix)) {
      *name = NameOf(o->frame);
      return o->id;
    }
  return 0;
}

void PythonFunctionSlices::Finish(const Emit& emit) {
  for (uint64_t key : thread_order_) Close(&threads_[key], 0, emit);
}

}  // namespace tracesmith::exporter
