// GNU build-ids of ELF objects: how a captured frame's module is recognised
// later, on this machine or another (the symbolizer matches files by it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tracesmith::stacks {

// Hex NT_GNU_BUILD_ID ("GNU" owner) found in an ELF note area, or "".
std::string BuildIdFromNotes(const uint8_t* notes, size_t size);

// Hex GNU build-id of the ELF file at `path`, or "".
std::string ReadBuildIdFromFile(const std::string& path);

}  // namespace tracesmith::stacks
