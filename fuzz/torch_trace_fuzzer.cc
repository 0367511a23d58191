// libFuzzer target: torch's structured log and Inductor's output code as
// symbolize/compiled_lines.h reads them (torch.compile's model lines), and
// the trace entries' text (model/compiled_lines.h): any bytes give graphs,
// handles and frames, never a crash; an entry decoded, encoded and decoded
// again reads the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tracesmith/model/compiled_lines.h"
#include "tracesmith/symbolize/compiled_lines.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracesmith;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  for (const symbolize::CompiledGraph& g : symbolize::ParseTorchTraceLog(in)) {
    for (const auto& [line, handle] : symbolize::HandleLines(g.code))
      if (line == 0 || handle.empty()) std::abort();
    for (const auto& [kernel, texts] : g.stacks)
      for (const std::string& t : texts) symbolize::ParseStackTrace(t);
  }
  for (const model::ModelFrame& f : symbolize::ParseStackTrace(in))
    if (f.file.empty() && f.line == 0) std::abort();
  const model::CompiledLine once = model::DecodeCompiledLine(in);
  if (model::DecodeCompiledLine(model::EncodeCompiledLine(once)) != once) std::abort();
  return 0;
}
