#!/usr/bin/env bash
# The README's first command: installs dependencies, builds TraceSmith, and
# runs the main job on a default.
#   - with an NVIDIA GPU and driver: profiles a bundled CUDA program
#     (or the command given as arguments) and analyses the trace;
#   - without one: analyses the real GPU trace shipped in examples/traces/.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
TS=build/release/bin/tracesmith

# A bf16 Transformer training run with host stacks (H100): call sites name the
# model's Python lines and the autograd nodes of the backward pass.
trace=examples/traces/transformer_train.sbt
[ -f "$trace" ] || trace=$(ls examples/traces/*.sbt | head -n 1)

have_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }
if have_gpu && grep -q "CUDA capture: built in" <($TS version); then
  out=build/quickstart.sbt
  if [ $# -gt 0 ]; then
    $TS profile --force -o "$out" -- "$@"
  else
    # The bundled launch-bound program (nvcc from the CUDA toolkit, sm_90).
    gpu/build-programs.sh build/gpu-programs >/dev/null
    $TS profile --force -o "$out" -- build/gpu-programs/launch_loop 20000
  fi
  trace=$out
else
  echo "No GPU here: analysing the GPU trace shipped in $trace (a PyTorch training run captured on an H100)"
fi
echo
$TS info "$trace"
echo
$TS analyze "$trace"
