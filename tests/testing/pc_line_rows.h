// The per-instruction rows hand-built test traces of GPU instruction samples
// and counts share (pc_sample_trace.h, sass_count_trace.h): a SASS
// instruction's source line and its text.
#pragma once

#include <cstdint>
#include <string>

#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

// An instruction of `function` in cubin `crc` of process `pid`: its line in `file` ("": none).
inline void AddPcLine(model::Trace& t, uint32_t pid, uint64_t crc, const std::string& function,
                      uint32_t pc, const std::string& file, uint32_t line) {
  model::PcLine l{};
  l.pc_offset = pc;
  l.line = line;
  l.pid = pid;
  l.cubin_crc = crc;
  l.function_id = t.strings.Intern(function);
  l.file_id = file.empty() ? 0 : t.strings.Intern(file);
  t.Rows<model::PcLine>().push_back(l);
}

// ... and its SASS text.
inline void AddPcSass(model::Trace& t, uint32_t pid, uint64_t crc, const std::string& function,
                      uint32_t pc, const std::string& text) {
  model::PcSass x{};
  x.pc_offset = pc;
  x.text_id = t.strings.Intern(text);
  x.pid = pid;
  x.cubin_crc = crc;
  x.function_id = t.strings.Intern(function);
  t.Rows<model::PcSass>().push_back(x);
}

}  // namespace tracesmith::testing
