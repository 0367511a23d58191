// CRC32C (Castagnoli), the checksum of every SBT chunk. Uses the SSE4.2 crc32
// instruction when the CPU has it (checked once at run time), a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracesmith {

// Extends `crc` (0 for a fresh checksum) over [data, data+n).
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace tracesmith
