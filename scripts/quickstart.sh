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
# Only what the main job runs: the CLI and the libraries it loads (the
# injection library and the GPU replayer, where CUDA is found). The tests are
# built by the test command (scripts/test.sh).
SECONDS=0
cmake --build --preset release --target tracesmith
echo "quickstart: built in $((SECONDS / 60)) min $((SECONDS % 60)) s"
TS=build/release/bin/tracesmith

# A bf16 Transformer training run with host stacks, captured by this version
# (H200, 2026-11-28): call sites name the model's Python lines and the autograd
# nodes of the backward pass; `info` shows what the capture cost.
trace=examples/traces/transformer_step.sbt
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
  echo "No GPU here: analysing the GPU trace shipped in $trace (a PyTorch training run captured on an H200)"
fi
echo
$TS info "$trace"
echo
$TS analyze "$trace"
