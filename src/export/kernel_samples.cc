#include "kernel_samples.h"

#include "tracesmith/base/status.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::exporter {

KernelSamples::KernelSamples(const analysis::PcSamples& samples, const model::Trace& meta)
    : functions_(analysis::SampledFunctions(samples, meta, 1)) {
  summaries_.reserve(functions_.size());
  for (uint32_t i = 0; i < functions_.size(); ++i) {
    const analysis::FunctionSamples& f = functions_[i];
    KernelSampleSummary s;
    s.index = i;
    if (!f.stalls.empty())
      s.top_stall =
          StrFormat("%s %.1f%%", std::string(model::ShortStallName(f.stalls[0].reason)).c_str(),
                    f.stalls[0].share);
    if (!f.lines.empty())
      s.hottest_line =
          StrFormat("%s %.1f%%", analysis::SourceLineText(f.lines[0].file, f.lines[0].line).c_str(),
                    f.lines[0].share);
    summaries_.push_back(std::move(s));
    by_key_.emplace(uint64_t(f.pid) << 32 | f.function_id, i);
    maybe_.set(f.function_id % kBits);
  }
}

}  // namespace tracesmith::exporter
