// The instructions a recorder reports (GPU instruction samples, exact
// counts), made readable where the program is gone: copies of the modules'
// cubins kept at module load (bounded by kCubinBudget), one PcLine row per
// new instruction (its source file and line, through CUPTI's SASS-to-source
// correlation), and at the end the cubins of the reported functions saved
// beside the trace (format::CubinDirOf) for the CLI to disassemble into
// PcSass rows (symbolize/sass.h): nvdisasm is not run inside the program.
//
// Threads: Keep (module load callbacks) takes its own lock; everything else
// runs on the writer thread.
#pragma once

#include <cupti.h>
#include <cupti_pcsampling.h>  // cuptiGetCubinCrc, cuptiGetSassToSourceCorrelation

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tracesmith/capture/recorder.h"

namespace tracesmith::hardware {

class CubinLines {
 public:
  static constexpr uint64_t kCubinBudget = 512ull << 20;  // cubin copies kept for line lookup

  explicit CubinLines(uint32_t pid) : pid_(pid) {}

  // A module loaded (any thread): a copy of its cubin, while the budget lasts.
  void Keep(const CUpti_ModuleResourceData& module);
  // Writer thread: the copies kept since the last call get their CRCs.
  void TakeKept();
  // The source file and line of `pc` in `function` of cubin `crc`, from the
  // module's line table; false when unknown. A CRC of 32 bits (CUPTI's SASS
  // metrics give them so) also finds a cubin whose 64-bit CRC ends with it;
  // a CRC no kept cubin has, the kept cubin that knows the function there.
  bool Lookup(uint64_t crc, const char* function, uint32_t pc, std::string* path, uint32_t* line);
  // The PcLine row of instruction (crc, function_id, pc) of `function` (its
  // mangled name), once per instruction.
  void WriteLine(format::SbtWriter& sbt, uint64_t crc, uint32_t function_id, const char* function,
                 uint32_t pc);
  // At the end: the cubins with a PcLine row, beside `output_path`.
  void SaveReported(const std::string& output_path);
  // `<prefix>.lines_unresolved`, `.cubins_not_kept`, `.cubins_saved`, `.cubins_not_saved`.
  void WriteStats(capture::StatSink& stats, const std::string& prefix);

  // Instructions with a PcLine row.
  bool empty() const { return lines_done_.empty(); }

 private:
  const std::vector<char>* Find(uint64_t crc) const;

  const uint32_t pid_;
  std::mutex mu_;  // new_, bytes_, not_kept_ (module loads and the writer)
  std::vector<std::vector<char>> new_;
  uint64_t bytes_ = 0, not_kept_ = 0;
  std::unordered_map<uint64_t, std::vector<char>> cubins_;  // by CRC (writer thread)
  std::unordered_map<uint64_t, uint64_t> aliases_;          // a row's CRC -> a kept one's
  // Instructions with a PcLine row: (function id, pc offset) by cubin CRC.
  std::unordered_map<uint64_t, std::unordered_set<uint64_t>> lines_done_;
  uint64_t lines_unresolved_ = 0, saved_ = 0, not_saved_ = 0;
};

}  // namespace tracesmith::hardware
