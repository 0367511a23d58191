#!/bin/sh
# Regenerates the LLVM XRay fixtures of tests/import (xray_test.cc):
#   xray_prog.instrmap            the instrumented binary's .text, xray_instr_map and symbol
#                                 table (objcopy), enough for `import --binary` and llvm-xray
#   xray_prog.instrmap.yaml       llvm-xray extract --symbolize: function id -> name
#   xray_basic.log, xray_fdr.log  logs written by compiler-rt's runtime in basic and FDR mode
#   xray_{basic,fdr}.trace_event.json  llvm-xray convert --symbolize, the reference output
# Needs clang++ with compiler-rt's XRay runtime (Debian: clang, libclang-rt-14-dev),
# llvm-xray and objcopy. Run from anywhere; writes next to this script.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
CXX=${CXX:-clang++}
LLVM_XRAY=${LLVM_XRAY:-llvm-xray}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$CXX" -O1 -fxray-instrument -fxray-instruction-threshold=1 -pthread \
  "$here/xray_prog.cc" -o "$tmp/xray_prog"

# Basic mode logs every call; the duration threshold (default 5 us) would drop short ones.
XRAY_OPTIONS="patch_premain=true xray_mode=xray-basic verbosity=0 xray_logfile_base=$tmp/basic-" \
  XRAY_BASIC_OPTIONS="func_duration_threshold_us=0" "$tmp/xray_prog" >/dev/null
# FDR mode: the program initialises, finalises and flushes it itself (--fdr).
XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr verbosity=0 xray_logfile_base=$tmp/fdr-" \
  "$tmp/xray_prog" --fdr >/dev/null
cp "$tmp"/basic-xray_prog.* "$here/xray_basic.log"
cp "$tmp"/fdr-xray_prog.* "$here/xray_fdr.log"
chmod 644 "$here/xray_basic.log" "$here/xray_fdr.log"

objcopy -j .text -j xray_instr_map "$tmp/xray_prog" "$here/xray_prog.instrmap" 2>/dev/null
"$LLVM_XRAY" extract --symbolize "$tmp/xray_prog" >"$here/xray_prog.instrmap.yaml"
for mode in basic fdr; do
  "$LLVM_XRAY" convert --symbolize --instr_map="$tmp/xray_prog" --output-format=trace_event \
    "$here/xray_$mode.log" >"$here/xray_$mode.trace_event.json"
done
ls -l "$here"/xray_*
