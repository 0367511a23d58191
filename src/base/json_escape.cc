#include "tracesmith/base/json_escape.h"

#include <cstdint>
#include <cstring>

namespace tracesmith {

char* JsonEscapeTo(std::string_view s, char* out) {
  static const char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    unsigned char c = *p;
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      const auto* run = p;
      while (p < end && *p >= 0x20 && *p != '"' && *p != '\\' && *p < 0x80) ++p;
      std::memcpy(out, run, static_cast<size_t>(p - run));
      out += p - run;
      continue;
    }
    if (c < 0x80) {
      *out++ = '\\';
      switch (c) {
        case '"':
          *out++ = '"';
          break;
        case '\\':
          *out++ = '\\';
          break;
        case '\n':
          *out++ = 'n';
          break;
        case '\t':
          *out++ = 't';
          break;
        case '\r':
          *out++ = 'r';
          break;
        default:
          std::memcpy(out, "u00", 3);
          out[3] = kHex[c >> 4];
          out[4] = kHex[c & 15];
          out += 5;
      }
      ++p;
      continue;
    }
    // Multi-byte UTF-8: copy a valid sequence, replace anything else.
    size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    bool ok = len > 0 && p + len <= end;
    for (size_t i = 1; ok && i < len; ++i) ok = (p[i] & 0xc0) == 0x80;
    if (ok && len == 3) {
      uint32_t cp = ((c & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
      ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
    } else if (ok && len == 4) {
      uint32_t cp =
          ((c & 0x07u) << 18) | ((p[1] & 0x3fu) << 12) | ((p[2] & 0x3fu) << 6) | (p[3] & 0x3fu);
      ok = cp >= 0x10000 && cp <= 0x10ffff;
    }
    if (ok) {
      std::memcpy(out, p, len);
      out += len;
      p += len;
    } else {
      std::memcpy(out, "\\ufffd", 6);
      out += 6;
      ++p;
    }
  }
  return out;
}

void AppendJsonEscaped(std::string_view s, std::string* out) {
  size_t old = out->size();
  out->resize(old + kJsonMaxEscapedPerByte * s.size());
  char* end = JsonEscapeTo(s, out->data() + old);
  out->resize(static_cast<size_t>(end - out->data()));
}

}  // namespace tracesmith
