#!/usr/bin/env bash
# Compiles gpu/programs/*.cu and bench/workloads/{launch_loop,api_costs}.cu into OUTDIR
# (sm_90: the GPU machine's H100/H200). Usage: gpu/build-programs.sh OUTDIR
set -eu
OUTDIR=${1:?output dir}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
mkdir -p "$OUTDIR"
pids=()
for src in "$ROOT"/gpu/programs/*.cu "$ROOT"/bench/workloads/launch_loop.cu "$ROOT"/bench/workloads/api_costs.cu; do
  name=$(basename "$src" .cu)
  if [ ! -x "$OUTDIR/$name" ] || [ "$src" -nt "$OUTDIR/$name" ]; then
    libs="-ldl -lcuda"
    [ "$name" = pointer_chase ] && libs="$libs -lcublas"  # cublasSgemmBatched
    "$NVCC" -O2 -std=c++17 -arch=sm_90 -o "$OUTDIR/$name" "$src" $libs &
    pids+=($!)
  fi
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
