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

trace=examples/traces/mlp_train.sbt
[ -f "$trace" ] || trace=$(ls examples/traces/*.sbt | head -n 1)

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x build/release/bin/launch_loop_demo ]; then
  out=build/quickstart.sbt
  if [ $# -gt 0 ]; then
    $TS profile --force -o "$out" -- "$@"
  else
    $TS profile --force -o "$out" -- build/release/bin/launch_loop_demo 20000
  fi
  trace=$out
else
  echo "No GPU here: analysing the GPU trace shipped in $trace"
fi
echo
$TS info "$trace"
echo
if $TS help analyze >/dev/null 2>&1; then
  $TS analyze "$trace"
else
  $TS view --stats --limit 15 "$trace"
fi
