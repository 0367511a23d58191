#!/usr/bin/env bash
# Capture overhead benchmark (GPU machine): baseline / tracesmith profile /
# torch.profiler, interleaved round by round, medians and ratios.
#
#   bench/capture_overhead.sh TRACESMITH_BIN LAUNCH_LOOP_BIN [ROUNDS=5]
#
# Configurations: base (no profiler); tracesmith (defaults: stacks on, mixed
# under Python); nostacks (--stacks none); cuptifloor (CUPTI kernel activity
# alone, no TraceSmith: bench/cupti_floor, when CUPTI_FLOOR names the built
# libcupti-floor.so); torch (torch.profiler); torchstack (with_stack=True).
#
# Workloads: bench/workloads/launch_loop.cu (200k tiny launches; torch.profiler
# cannot wrap a C++ binary, so its twin torch_launch_loop.py is measured for
# that comparison) and bench/workloads/torch_mlp_train.py (the training step).
# Metric: the time each program reports for its timed loop (warm-up and
# process start excluded), so the ratios are the overhead on the application.
set -u
TS=${1:?tracesmith binary}
LL=${2:?launch_loop binary}
ROUNDS=${3:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=${TMPDIR:-/tmp}/ts-bench.$$
mkdir -p "$TMP"
KINDS=${BENCH_KINDS:-default}

metric() {  # $1 = key; reads program output on stdin, prints the value
  sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | tail -1
}
run() {  # $1 = label, rest = command; appends "label value"
  local label=$1; shift
  local out t0 t1
  t0=$(date +%s%N)
  out=$("$@" 2>"$TMP/err") || { echo "FAILED: $label: $*"; cat "$TMP/err"; return; }
  t1=$(date +%s%N)
  # Whole process (start-up, CUDA init, warm-up, the profiler's own start and
  # end): what a user waits for; the timed loop above is what the program feels.
  echo "wall_$label $(( (t1 - t0) / 1000 ))e-6" >> "$TMP/results"
  local v
  case $label in
    ll_*) v=$(echo "$out" | metric seconds) ;;
    pyll_*) v=$(echo "$out" | metric seconds) ;;
    mlp_*) v=$(echo "$out" | metric step_ms) ;;
  esac
  echo "$label $v" | tee -a "$TMP/results"
}
prof() { "$TS" profile -q -f --kinds "$KINDS" -o "$TMP/t.sbt" -- "$@"; }
nostacks() { "$TS" profile -q -f --kinds "$KINDS" --stacks none -o "$TMP/t.sbt" -- "$@"; }
FLOOR=${CUPTI_FLOOR:-}
floor() { CUDA_INJECTION64_PATH=$FLOOR "$@"; }

for r in $(seq 1 "$ROUNDS"); do
  echo "# round $r"
  PYLL=(python3 "$HERE/workloads/torch_launch_loop.py" --n 50000)
  MLP=(python3 "$HERE/workloads/torch_mlp_train.py" --steps 50)
  run ll_base "$LL" 200000 1
  run ll_tracesmith prof "$LL" 200000 1
  run ll_nostacks nostacks "$LL" 200000 1
  [ -n "$FLOOR" ] && run ll_cuptifloor floor "$LL" 200000 1
  run pyll_base "${PYLL[@]}"
  run pyll_tracesmith prof "${PYLL[@]}"
  run pyll_nostacks nostacks "${PYLL[@]}"
  run pyll_torch "${PYLL[@]}" --profiler torch
  run mlp_base "${MLP[@]}"
  run mlp_tracesmith prof "${MLP[@]}"
  run mlp_nostacks nostacks "${MLP[@]}"
  [ -n "$FLOOR" ] && run mlp_cuptifloor floor "${MLP[@]}"
  run mlp_torch "${MLP[@]}" --profiler torch
  run mlp_torchstack "${MLP[@]}" --profiler torch-stack
done

python3 - "$TMP/results" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    k, _, v = line.partition(" ")
    if v.strip():
        vals.setdefault(k, []).append(float(v))
med = {k: statistics.median(v) for k, v in vals.items()}
print("BENCH medians (launch loops: seconds per loop; mlp: ms per step):")
for k in sorted(med):
    print(f"BENCH {k}: median={med[k]:.6g} n={len(vals[k])} all={['%.4g' % x for x in vals[k]]}")
for w in ("ll", "pyll", "mlp", "wall_ll", "wall_pyll", "wall_mlp"):
    b = med.get(f"{w}_base")
    if not b:
        continue
    for p in ("tracesmith", "nostacks", "cuptifloor", "torch", "torchstack"):
        m = med.get(f"{w}_{p}")
        if m:
            print(f"BENCH ratio {w} {p}/base = {m / b:.3f}x")
PY
ls -l "$TMP/t.sbt" 2>/dev/null
rm -rf "$TMP"
