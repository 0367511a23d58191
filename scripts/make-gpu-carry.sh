#!/usr/bin/env bash
# Packs what the GPU machine needs from a development build into one small
# folder to carry there (no debug info):
#   scripts/make-gpu-carry.sh [BUILD=build/release] [DEST=build/gpu-carry]
# then, on the GPU machine: scripts/gpu-check.sh DEST
# Needs the targets: tracesmith tracesmith-inject tracesmith-replay-gpu
# cupti-floor replay_make_capture capture_gpu_test capture_gpu_stacks_test.
set -eu
B=${1:-build/release}
D=${2:-build/gpu-carry}
rm -rf "$D"
mkdir -p "$D/bin" "$D/lib" "$D/gpu" "$D/tests/capture"
copy() { cp "$B/$1" "$D/$1" && strip --strip-debug "$D/$1"; }
for f in bin/tracesmith bin/replay_make_capture bin/replay_va_probe lib/libtracesmith-inject.so \
         lib/libtracesmith-replay-gpu.so lib/libcupti-floor.so \
         tests/capture/capture_gpu_test tests/capture/capture_gpu_stacks_test \
         tests/capture/capture_gpu_range_test tests/capture/capture_gpu_session_test \
         tests/capture/capture_gpu_sync_test tests/capture/capture_gpu_memory_test; do
  copy "$f"
done
cp "$B/gpu/replay_kernels.cubin" "$D/gpu/"
# The Python extension's libraries, for gpu/build-python-ext.sh on a machine
# without the build's dependencies (static zstd and sqlite3 from Debian).
mkdir -p "$D/pyext"
for l in cluster format export import job memory analysis timeline session_common capture_common model base; do
  # The newest, should an old build folder still hold a moved module's copy.
  f=$(ls -t "$B"/src/*/libtracesmith_$l.a 2>/dev/null | head -n 1)
  [ -n "$f" ] || { echo "make-gpu-carry: no libtracesmith_$l.a under $B/src (build it)" >&2; exit 1; }
  cp "$f" "$D/pyext/" &&
    strip --strip-debug "$D/pyext/libtracesmith_$l.a"
done
cp /usr/lib/x86_64-linux-gnu/libzstd.a /usr/lib/x86_64-linux-gnu/libsqlite3.a "$D/pyext/"
du -sh "$D"
