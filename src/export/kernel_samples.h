// GPU instruction samples (timeline/pc_samples.h) summarized once per sampled
// function for the exporters: Perfetto annotates each kernel slice of a
// sampled function with its summary (interned: the file grows by a few bytes
// per slice, never per sample), SQLite writes the summaries and the samples
// per instruction and stall reason as tables (docs/export.md).
//
// The samples are the whole trace's (ExportContext::pc_samples, added up in
// the export's first pass), so a summary describes all launches of the
// function, not the one slice it is shown on: continuous sampling gives no
// launch its own samples (docs/pc-sampling.md).
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracesmith/model/trace.h"
#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::exporter {

struct KernelSampleSummary {
  uint32_t index = 0;        // its function in KernelSamples::functions()
  std::string top_stall;     // "long_scoreboard 76.0%" (of the function's samples)
  std::string hottest_line;  // "kernels.cu:42 81.0%"
};

class KernelSamples {
 public:
  // `meta`: the trace's strings and PcLine rows (complete after the first pass).
  KernelSamples(const analysis::PcSamples& samples, const model::Trace& meta);
  bool empty() const { return functions_.empty(); }
  // By (pid, function id); each with its top stall reason and hottest line.
  const std::vector<analysis::FunctionSamples>& functions() const { return functions_; }
  const std::vector<KernelSampleSummary>& summaries() const { return summaries_; }

  // The summary of the kernel rows of (pid, name_id: the kernel's mangled
  // name, as the samples name their function); null when it was not sampled.
  // Once per kernel slice: a bit per name id rules out most kernels, and the
  // last hit is remembered (kernels of one name come in runs).
  const KernelSampleSummary* Find(uint32_t pid, uint32_t name_id) const {
    if (empty() || !maybe_[name_id % kBits]) return nullptr;
    const uint64_t key = uint64_t(pid) << 32 | name_id;
    if (last_ != nullptr && last_key_ == key) return last_;
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return nullptr;
    last_key_ = key;
    last_ = &summaries_[it->second];
    return last_;
  }

 private:
  static constexpr size_t kBits = 4096;
  std::vector<analysis::FunctionSamples> functions_;
  std::vector<KernelSampleSummary> summaries_;
  std::unordered_map<uint64_t, uint32_t> by_key_;  // pid << 32 | function id -> summary
  std::bitset<kBits> maybe_;                       // function id % kBits of every summary
  mutable uint64_t last_key_ = 0;
  mutable const KernelSampleSummary* last_ = nullptr;
};

}  // namespace tracesmith::exporter
