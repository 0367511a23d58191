// Symbolization of captured native frames, after capture and possibly on
// another machine: fills Frame function/file/line from each module's ELF
// symbol table and DWARF line table (elfutils libdw), with C++ names
// demangled. Python frames are captured resolved and are left alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::symbolize {

struct SymbolizeOptions {
  // Also looked in for a module, by file name, when its recorded path is
  // missing or holds a different build (e.g. a copy of the target's
  // libraries on the analysis machine). The build-id must match.
  std::vector<std::string> search_dirs;
  // Symbolize frames that already have a function name.
  bool overwrite = false;
  // Seconds for the whole pass; 0: no limit. Once spent, the frames not yet
  // looked up keep function 0 and `timed_out` is set (an in-process capture
  // names its frames at Session::Stop, inside the program: bounded there).
  double time_limit_s = 0;
};

struct SymbolizeStats {
  uint64_t native_frames = 0;      // native frames considered
  uint64_t with_function = 0;      // got a function name
  uint64_t with_line = 0;          // got file:line (needs debug info)
  uint64_t modules_missing = 0;    // module file not found (path and search_dirs)
  uint64_t build_id_mismatch = 0;  // a file was found but is another build: not used
  bool timed_out = false;          // time_limit_s ran out: some frames were not looked up
  uint64_t frames_left = 0;        // native frames not looked up for that reason
};

// Symbolizes every native frame of `trace` in place. Frames whose module
// cannot be found keep function 0 (tools show module+offset). Fails only on
// inconsistent input (a frame naming a mapping id the trace lacks).
StatusOr<SymbolizeStats> Symbolize(model::Trace* trace, const SymbolizeOptions& options = {});

// One address in one ELF file (for tests and tools): `vaddr` is an ELF
// virtual address (Frame::rel_pc - 1 for a captured return address).
struct SymbolInfo {
  std::string function;  // demangled; empty if no symbol covers vaddr
  std::string file;      // empty without debug info
  uint32_t line = 0;
};
StatusOr<SymbolInfo> SymbolizeAddress(const std::string& elf_path, uint64_t vaddr);

}  // namespace tracesmith::symbolize
