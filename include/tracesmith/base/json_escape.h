// JSON string escaping shared by every JSON writer (reports, exports):
// quotes, backslashes and control characters are escaped, and bytes that
// are not valid UTF-8 become U+FFFD, so every output parses.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tracesmith {

// Worst case output bytes per input byte ("\u0001" or "\ufffd").
inline constexpr size_t kJsonMaxEscapedPerByte = 6;

// Writes the escaped form of `s` (no quotes) at `out`, which has room for
// kJsonMaxEscapedPerByte bytes per input byte; returns the end.
char* JsonEscapeTo(std::string_view s, char* out);

// Appends the escaped form of `s` (no quotes) to `out`.
void AppendJsonEscaped(std::string_view s, std::string* out);

}  // namespace tracesmith
