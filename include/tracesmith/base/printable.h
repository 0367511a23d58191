// Text from a trace (kernel names, NVTX messages, file names) made safe for a
// terminal: control characters (below 0x20, and 0x7f) become \xNN, so an
// escape sequence in a traced program's string is shown, never interpreted.
// Bytes from 0x80 up pass unchanged (UTF-8).
#pragma once

#include <string>
#include <string_view>

namespace tracesmith {

std::string Printable(std::string_view text);

}  // namespace tracesmith
