#!/usr/bin/env bash
# Where the GPU-metrics decode thread's time goes, per setting: runs
# gpu/programs/gpu_metrics (copy, GEMM, FMA phases with idle gaps) under
# `tracesmith profile --gpu-metrics` once per line of settings below and
# prints the capture's gpu_metrics.* stats (samples, overflows, gaps, time in
# DecodeData / evaluation / image re-initialisation) and the wall time.
#
#   gpu/probes/pm_decode_sweep.sh TRACESMITH GPU_PROGRAMS_DIR OUT_DIR [SETTINGS...]
# SETTINGS: "INTERVAL IMAGE_SAMPLES DECODE_MS [METRICS]" (0: the recorder's
# default; METRICS: --gpu-metrics=METRICS, else the default set),
# e.g. "100us 0 0" "100us 128 2" "1ms 64 0 TPC.TriageCompute.sm__cycles_active.avg".
set -u
TS=$1 PROGS=$2 OUT=$3
shift 3
mkdir -p "$OUT"
[ $# -gt 0 ] || set -- "100us 0 0" "100us 128 0" "100us 128 2" "1ms 0 0" "1ms 64 0"
n=0
for s in "$@"; do
  read -r interval image decode metrics <<< "$s"
  n=$((n + 1))
  sbt=$OUT/sweep$n.sbt
  env=()
  [ "$image" != 0 ] && env+=(TRACESMITH_GPU_METRICS_IMAGE_SAMPLES=$image)
  [ "$decode" != 0 ] && env+=(TRACESMITH_GPU_METRICS_DECODE_MS=$decode)
  t0=$(date +%s%N)
  env "${env[@]}" timeout 40 "$TS" profile -f "--gpu-metrics${metrics:+=$metrics}" --gpu-metrics-interval "$interval" \
    -o "$sbt" -- "$PROGS/gpu_metrics" 0.4 300 > "$OUT/sweep$n.log" 2>&1
  code=$?
  t1=$(date +%s%N)
  echo "PMSWEEP $n: interval $interval image ${image/#0/auto} decode ${decode/#0/auto} ms ${metrics:-default set}:" \
    "exit $code, $(( (t1 - t0) / 1000000 )) ms"
  grep -E "^tracesmith: GPU metrics" "$OUT/sweep$n.log" | head -3 | cut -c1-200
  "$TS" info "$sbt" 2>&1 | grep -E "gpu_metrics\." | tr -s ' ' | paste -sd' ' | fold -w 240
done
