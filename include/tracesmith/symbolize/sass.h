// SASS text for GPU instruction samples (issue #39): after a capture with
// --pc-sampling, the cubins of the sampled modules lie beside the trace
// (format::CubinDirOf); nvdisasm (the CUDA toolkit's) disassembles them here
// and every sampled instruction (each has a PcLine row) gets a PcSass row with
// its text, so a machine without CUDA shows it. Run by the CLI (`profile` at the
// end of a capture, `symbolize`) and at an in-process capture's stop
// (finish_capture.h), never while a capture records.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::symbolize {

// nvdisasm's listing (`nvdisasm -c FILE.cubin`) as function (mangled name) ->
// offset in the function -> instruction text ("@P0 BRA `(.L_x_1)",
// "LDG.E.128 R4, desc[UR4][R2.64]": without the offset comment, the encoding
// comment and the final ';'). Lines it does not understand are skipped.
using SassListing = std::map<std::string, std::map<uint32_t, std::string>, std::less<>>;
SassListing ParseNvdisasm(std::string_view listing);

// The symbol-table indices of `functions` (mangled names) in an ELF file (a
// cubin), for `nvdisasm -fun`: listing only the sampled kernels of NCCL's
// cubin took 1.2 s per rank (3 modules) where the whole cubin took ~100 s
// (2×H200, 2026-11-30). Empty when the file is not ELF or holds none of them.
std::vector<uint32_t> FunctionSymbolIndices(const std::string& elf_path,
                                            const std::set<std::string, std::less<>>& functions);

// The nvdisasm to run: $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, then
// PATH; "" when there is none.
std::string FindNvdisasm();

struct SassOptions {
  std::string nvdisasm;    // "" -> FindNvdisasm()
  double timeout_s = 120;  // per cubin; a listing that takes longer is given up
  double budget_s = 300;   // for all cubins; the rest are left (counted)
  unsigned jobs = 0;       // nvdisasm processes at once; 0: one per core
};

struct SassStats {
  uint64_t instructions = 0;  // sampled instructions without a PcSass row before
  uint64_t with_text = 0;     // got one now
  uint64_t cubins = 0, cubins_missing = 0, cubins_failed = 0, cubins_skipped = 0;
  double seconds = 0;
  std::string nvdisasm;  // the one run ("" when none was found)
  std::string first_error;
};

// Adds PcSass rows to `trace` for its sampled instructions (PcLine rows)
// that have none, from the cubins in `cubin_dir` (format::CubinFileName).
// Fails only when there is work and no nvdisasm.
StatusOr<SassStats> AddSass(model::Trace* trace, const std::string& cubin_dir,
                            const SassOptions& options = {});

}  // namespace tracesmith::symbolize
