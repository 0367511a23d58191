// How the trace files of one run are named, in one place for the capture
// that writes them and the readers that find them again (cluster/job_files.h).
//
// In a run, the first process to initialise CUDA writes the output FILE
// itself; every other process writes <stem>.pid<PID><ext>, or
// <stem>.rank<RANK><ext> when RANK is set (torchrun), where FILE =
// <dir>/<stem><ext> and <ext> is the last ".xxx" of the file name (none when
// the name has no dot past its first character: "run" and ".hidden" have none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tracesmith::format {

// "out/run.sbt" -> {"out/", "run", ".sbt"}; "run" -> {"", "run", ""}.
struct RunNameParts {
  std::string dir;  // up to and including the last '/', or empty
  std::string stem;
  std::string ext;
};
RunNameParts SplitRunName(const std::string& path);

// The file process `pid` writes for `base`: <stem>.rank<rank><ext> when rank
// >= 0, else <stem>.pid<pid><ext> (base itself is the first process's).
std::string PerProcessOutputPath(const std::string& base, uint32_t pid, int rank);

// Which process of a run a file name (no directory) belongs to, for a run
// of <stem><ext>: "run.rank3.sbt" -> {kRank, 3}, "run.pid42.sbt" -> {kPid,
// 42}; nullopt for any other name ("run.sbt" itself, "run.pidx.sbt").
struct RunMember {
  enum Kind : uint8_t { kRank, kPid } kind;
  uint64_t number;
};
std::optional<RunMember> ParseRunMember(std::string_view file_name, std::string_view stem,
                                        std::string_view ext);

// Where a capture with GPU instruction sampling keeps the cubins of the
// sampled modules until they are disassembled (symbolize/sass.h):
// "<trace>.cubins/", one file per module, "<CRC as 16 hex digits>.cubin".
std::string CubinDirOf(const std::string& trace_path);
std::string CubinFileName(uint64_t cubin_crc);

// Numbers as numbers: "rank2" before "rank10" (file listings of a run).
bool NaturalLess(std::string_view a, std::string_view b);

}  // namespace tracesmith::format
