#!/usr/bin/env bash
# Every GPU test and the capture overhead benchmark, in one go, on the GPU
# machine. Run from the repository root:
#
#   scripts/gpu-check.sh [BUILD_DIR=build/gpu]       (GPU_CHECK=tests,fixtures,bench,example)
#
# BUILD_DIR may be carried from the development machine (configured with
# -DTS_BUILD_TESTS=ON; zstd is static); it is configured and built here when
# bin/tracesmith is missing. Logs and small artifacts go to $OUT (or
# ./gpu-check-out): gpu-check.log, bench.log, raw CUPTI fixtures, example trace.
set -u
BUILD=${1:-build/gpu}
OUT=${OUT:-$PWD/gpu-check-out}
WHAT=${GPU_CHECK:-tests,fixtures,example,bench}
ROUNDS=${BENCH_ROUNDS:-5}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu-check.log") 2>&1
want() { [[ ",$WHAT," == *",$1,"* ]]; }

echo "GPU-CHECK date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "GPU-CHECK gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
echo "GPU-CHECK host: $(uname -r), $(nproc) cores; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

if [ ! -x "$BUILD/bin/tracesmith" ]; then
  echo "GPU-CHECK building $BUILD"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTS_BUILD_TESTS=ON >/dev/null &&
    ninja -C "$BUILD" tracesmith tracesmith-inject capture_gpu_test || { echo "GPU-CHECK build FAILED"; exit 1; }
fi
PROGS=$BUILD/gpu-programs
gpu/build-programs.sh "$PROGS" || { echo "GPU-CHECK nvcc FAILED"; exit 1; }
TS=$(realpath "$BUILD/bin/tracesmith")
"$TS" devices

export TS_TRACESMITH=$TS TS_GPU_BIN=$(realpath "$PROGS") TS_GPU_OUT=${TMPDIR:-/tmp}/ts-gpu-traces
export TS_TORCH_WORKLOAD=$PWD/bench/workloads/torch_mlp_train.py PYTHONUNBUFFERED=1
mkdir -p "$TS_GPU_OUT"

if want fixtures; then
  # Raw CUPTI records for the CPU conversion tests (tests/capture/fixtures/).
  RAW=$TS_GPU_OUT/raw
  for p in "kernel_count 10" "cuda_graph 2"; do
    rm -rf "$RAW"; mkdir -p "$RAW"
    name=$(echo "$p" | tr ' ' '_')
    "$TS" profile -q -f --dump-raw "$RAW" -o "$TS_GPU_OUT/$name.sbt" -- $PROGS/$p
    cp "$RAW"/cupti-*.rawdump "$OUT/$name.rawdump" && echo "GPU-CHECK fixture $name.rawdump $(stat -c %s "$OUT/$name.rawdump") bytes"
  done
fi

if want tests; then
  "$BUILD/tests/capture/capture_gpu_test" 2>&1 | grep -v '^\[.*\] tracesmith: recording' 
  echo "GPU-CHECK gtest exit: ${PIPESTATUS[0]}"
fi

if want example; then
  # A small real trace: a few PyTorch training steps.
  "$TS" profile -f -o "$OUT/mlp_train.sbt" -- python3 bench/workloads/torch_mlp_train.py --steps 5
  "$TS" info "$OUT/mlp_train.sbt" | head -40
fi

if want bench; then
  bench/capture_overhead.sh "$TS" "$PROGS/launch_loop" "$ROUNDS" 2>&1 | tee "$OUT/bench.log"
fi
echo "GPU-CHECK done: $(date -u +%H:%M:%S)"
