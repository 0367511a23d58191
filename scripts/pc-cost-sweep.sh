#!/usr/bin/env bash
# Where --pc-sampling's cost on a launch-bound step sits (issue #39): per-launch cost
# (api_costs, cudaLaunchKernel) and the bf16 Transformer step (step_ms), under the default
# capture and under --pc-sampling at several periods and CUPTI worker sleeps, rounds interleaved.
# Usage (GPU machine): scripts/pc-cost-sweep.sh CARRY_DIR OUT_DIR [ROUNDS]
set -u
CARRY=${1:?carry dir}; OUT=${2:?out dir}; ROUNDS=${3:-3}
TS=$CARRY/bin/tracesmith
mkdir -p "$OUT/bin"
nvcc -O2 -std=c++17 -arch=sm_90 -o "$OUT/bin/api_costs" bench/workloads/api_costs.cu -ldl -lcuda || exit 1
CONFIGS=("base" "ts" "ts --pc-sampling-period 15" "ts --pc-sampling-period 17"
         "ts --pc-sampling-period 20" "sleep100 ts --pc-sampling-period 15")
run() {  # $1 workload (launch|xf), rest: config
  local w=$1; shift
  local env=() cfg=("$@")
  if [ "${cfg[0]}" = sleep100 ]; then env=(TRACESMITH_PC_SAMPLING_SLEEP_MS=100); cfg=("${cfg[@]:1}"); fi
  local cmd
  if [ "$w" = launch ]; then cmd=("$OUT/bin/api_costs" 50000 cudaLaunchKernel)
  else cmd=(python3 -u bench/workloads/torch_transformer_train.py --steps 40); fi
  if [ "${cfg[0]}" = base ]; then env "${env[@]}" "${cmd[@]}"
  else env "${env[@]}" "$TS" profile -q -f --no-symbolize "${cfg[@]:1}" -o "$OUT/s.sbt" -- "${cmd[@]}"; fi
}
for r in $(seq "$ROUNDS"); do
  for c in "${CONFIGS[@]}"; do
    v=$(run launch $c 2>&1 | grep -o "ns_per_call=[0-9.]*")
    echo "SWEEP launch round=$r [$c] $v"
  done
  for c in "ts" "ts --pc-sampling-period 15" "ts --pc-sampling-period 20" "sleep100 ts --pc-sampling-period 15"; do
    v=$(run xf $c 2>&1 | grep -o "step_ms=[0-9.]*")
    echo "SWEEP xf round=$r [$c] $v"
  done
done
rm -rf "$OUT/s.sbt" "$OUT/s.sbt.cubins" "$OUT/bin"
