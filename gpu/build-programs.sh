#!/usr/bin/env bash
# Compiles gpu/programs/*.cu and bench/workloads/{launch_loop,api_costs}.cu into OUTDIR
# (sm_90: the GPU machine's H100/H200). Usage: gpu/build-programs.sh OUTDIR
set -eu
OUTDIR=${1:?output dir}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
mkdir -p "$OUTDIR"
# CUPTI for pc_sampling_probe: headers and library in the toolkit's lib64 or extras/CUPTI, found
# at run time through an rpath.
CUDA_HOME=$(cd "$(dirname "$(readlink -f "$(command -v "$NVCC")")")/.." && pwd)
CUPTI_FLAGS="-lineinfo -lcupti"
if [ -d "$CUDA_HOME/extras/CUPTI/include" ]; then
  CUPTI_FLAGS="$CUPTI_FLAGS -I$CUDA_HOME/extras/CUPTI/include"
fi
for d in "$CUDA_HOME/lib64" "$CUDA_HOME/extras/CUPTI/lib64"; do
  if [ -d "$d" ]; then CUPTI_FLAGS="$CUPTI_FLAGS -L$d -Xlinker -rpath,$d"; fi
done
pids=()
for src in "$ROOT"/gpu/programs/*.cu "$ROOT"/bench/workloads/launch_loop.cu "$ROOT"/bench/workloads/api_costs.cu; do
  name=$(basename "$src" .cu)
  if [ ! -x "$OUTDIR/$name" ] || [ "$src" -nt "$OUTDIR/$name" ] ||
    { [ -f "${src%.cu}.h" ] && [ "${src%.cu}.h" -nt "$OUTDIR/$name" ]; }; then  # its own header
    libs="-ldl -lcuda"
    [ "$name" = pointer_chase ] && libs="$libs -lcublas"  # cublasSgemmBatched
    [ "$name" = gpu_metrics ] && libs="$libs -lcublas"    # a bf16 GEMM (issue #40)
    [ "$name" = pc_sampling_probe ] && libs="$libs $CUPTI_FLAGS"  # issue #39
    [ "$name" = pc_sampling_target ] && libs="$libs -lineinfo"    # its samples land on lines
    [ "$name" = pc_sampling_more ] && libs="$libs -lineinfo"
    [ "$name" = sass_counts ] && libs="$libs -lineinfo"          # counts per source line
    "$NVCC" -O2 -std=c++17 -arch=sm_90 -o "$OUTDIR/$name" "$src" $libs &
    pids+=($!)
  fi
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
