#!/usr/bin/env python3
"""Writes bad_utf8.sbt: examples/traces/launch_loop.sbt with its first string
chunk stored raw (decompressed with the `zstd` tool) and the string
"capture.tool" changed to "\\xffapture.tool" (invalid UTF-8), checksums fixed.
The SBT format does not validate strings; readers must cope. Run from this
folder; needs the zstd command-line tool."""

import struct
import subprocess

MAGIC = 0x6B484353


def crc32c(data: bytes) -> int:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    c = 0xFFFFFFFF
    for x in data:
        c = table[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


src = open("../../../examples/traces/launch_loop.sbt", "rb").read()
out = bytearray(src[:24])
off, patched = 24, False
while off + 24 <= len(src):
    magic, typ, flags, stored, raw, _, _ = struct.unpack_from("<IHHIIII", src, off)
    if magic != MAGIC:
        break
    payload = src[off + 24: off + 24 + stored]
    off += 24 + stored
    if typ == 3:  # the footer index: offsets change; readers then scan the chunks
        continue
    if not patched and flags & 1:
        plain = subprocess.run(["zstd", "-d", "-c"], input=payload, capture_output=True,
                               check=True).stdout
        if b"capture.tool" in plain:
            payload = plain.replace(b"capture.tool", b"\xffapture.tool", 1)
            flags, raw, patched = flags & ~1, len(payload), True
    header = bytearray(struct.pack("<IHHIIII", MAGIC, typ, flags, len(payload), raw, 0, 0))
    struct.pack_into("<I", header, 16, crc32c(payload))
    struct.pack_into("<I", header, 20, crc32c(bytes(header[:20])))
    out += header + payload
assert patched, "no string chunk holds capture.tool"
open("bad_utf8.sbt", "wb").write(out)
